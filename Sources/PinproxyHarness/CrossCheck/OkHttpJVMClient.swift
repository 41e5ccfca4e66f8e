/// The Java client that runs real OkHttp for `check --cross-check`, compiled on first use
/// against Debian's `libokhttp-java` (okhttp, okio, okhttp-tls).
///
/// One GET through an HTTP proxy (none when PROXY-URL is empty), the world's host looked up
/// as ADDRESS (no DNS knows it). Trust is `HandshakeCertificates` with the anchors of one PEM
/// bundle and nothing else, as a test PKI is installed in an OkHttp client; with that custom
/// trust manager OkHttp cleans chains with its `BasicCertificateChainCleaner`. The
/// `CertificatePinner` holds the policy's `certificatePinner` entries as written; OkHttp
/// itself matches the patterns against the host. Exit 0 on a 200 answer, 1 on any failure
/// (the exception's first line on standard output), 2 on a usage error.
enum OkHttpJVMClient {
    static let className = "PinproxyOkHttpClient"

    static let source = #"""
        import java.io.FileInputStream;
        import java.io.IOException;
        import java.io.InputStream;
        import java.net.InetAddress;
        import java.net.InetSocketAddress;
        import java.net.Proxy;
        import java.net.URI;
        import java.security.cert.Certificate;
        import java.security.cert.CertificateFactory;
        import java.security.cert.X509Certificate;
        import java.util.Collections;
        import okhttp3.CertificatePinner;
        import okhttp3.Dns;
        import okhttp3.OkHttpClient;
        import okhttp3.Request;
        import okhttp3.Response;
        import okhttp3.internal.Version;
        import okhttp3.tls.HandshakeCertificates;

        // usage: PinproxyOkHttpClient --version
        //        PinproxyOkHttpClient URL PROXY-URL HOST ADDRESS ANCHORS.pem [PATTERN PIN]...
        public final class PinproxyOkHttpClient {
            public static void main(String[] args) throws Exception {
                if (args.length == 1 && args[0].equals("--version")) {
                    System.out.println(Version.userAgent() + " on Java " + System.getProperty("java.version"));
                    return;
                }
                if (args.length < 5 || (args.length - 5) % 2 != 0) {
                    System.err.println("usage: PinproxyOkHttpClient URL PROXY-URL HOST ADDRESS ANCHORS.pem [PATTERN PIN]...");
                    System.exit(2);
                }
                String host = args[2];
                InetAddress address = InetAddress.getByName(args[3]);
                Proxy proxy = Proxy.NO_PROXY;
                if (!args[1].isEmpty()) {
                    URI url = new URI(args[1]);
                    proxy = new Proxy(Proxy.Type.HTTP, new InetSocketAddress(url.getHost(), url.getPort()));
                }
                HandshakeCertificates.Builder trust = new HandshakeCertificates.Builder();
                try (InputStream in = new FileInputStream(args[4])) {
                    for (Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                        trust.addTrustedCertificate((X509Certificate) certificate);
                    }
                }
                HandshakeCertificates certificates = trust.build();
                CertificatePinner.Builder pins = new CertificatePinner.Builder();
                for (int i = 5; i < args.length; i += 2) pins.add(args[i], args[i + 1]);
                Dns dns = name -> name.equals(host) ? Collections.singletonList(address) : Dns.SYSTEM.lookup(name);
                OkHttpClient client = new OkHttpClient.Builder()
                    .proxy(proxy)
                    .dns(dns)
                    .sslSocketFactory(certificates.sslSocketFactory(), certificates.trustManager())
                    .certificatePinner(pins.build())
                    .retryOnConnectionFailure(false)
                    .build();
                try (Response response = client.newCall(new Request.Builder().url(args[0]).build()).execute()) {
                    System.out.println("HTTP " + response.code());
                    System.exit(response.code() == 200 ? 0 : 1);
                } catch (IOException e) {
                    System.out.println(e.toString().split("\n")[0]);
                    System.exit(1);
                }
            }
        }

        """#
}
