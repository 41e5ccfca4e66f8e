// A real OkHttp client (Debian's libokhttp-java) for the harness's real-client tests:
// a GET through an HTTP proxy (none when PROXY-URL is empty) with a trust store made of
// the given PEM files and a CertificatePinner for the host, which it looks up as ADDRESS
// (no DNS knows it). Exit 0 on a 200 answer, 1 on any failure.
//
// usage: PinnedGet URL PROXY-URL HOST ADDRESS PIN[,PIN...] ANCHORS.pem [ANCHORS.pem ...]
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.URI;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collections;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import okhttp3.CertificatePinner;
import okhttp3.Dns;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

public class PinnedGet {
    public static void main(String[] args) throws Exception {
        String host = args[2];
        InetAddress address = InetAddress.getByName(args[3]);
        Proxy proxy = Proxy.NO_PROXY;
        if (!args[1].isEmpty()) {
            URI url = new URI(args[1]);
            proxy = new Proxy(Proxy.Type.HTTP, new InetSocketAddress(url.getHost(), url.getPort()));
        }
        KeyStore anchors = KeyStore.getInstance(KeyStore.getDefaultType());
        anchors.load(null, null);
        CertificateFactory factory = CertificateFactory.getInstance("X.509");
        int count = 0;
        for (int i = 5; i < args.length; i++) {
            try (InputStream in = new FileInputStream(args[i])) {
                for (Certificate certificate : factory.generateCertificates(in)) {
                    anchors.setCertificateEntry("anchor" + (count++), certificate);
                }
            }
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(anchors);
        X509TrustManager manager = (X509TrustManager) trust.getTrustManagers()[0];
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, new TrustManager[] {manager}, null);
        CertificatePinner.Builder pins = new CertificatePinner.Builder();
        for (String pin : args[4].split(",")) pins.add(host, pin);
        Dns dns = name -> name.equals(host) ? Collections.singletonList(address) : Dns.SYSTEM.lookup(name);
        OkHttpClient client = new OkHttpClient.Builder()
            .proxy(proxy)
            .dns(dns)
            .sslSocketFactory(context.getSocketFactory(), manager)
            .certificatePinner(pins.build())
            .retryOnConnectionFailure(false)
            .build();
        try (Response response = client.newCall(new Request.Builder().url(args[0]).build()).execute()) {
            System.out.println("HTTP " + response.code());
            System.exit(response.code() == 200 ? 0 : 1);
        } catch (IOException e) {
            System.out.println(e);
            System.exit(1);
        }
    }
}
