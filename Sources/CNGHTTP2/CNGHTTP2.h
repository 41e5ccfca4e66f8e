#ifndef PINPROXY_CNGHTTP2_H
#define PINPROXY_CNGHTTP2_H
#include <nghttp2/nghttp2.h>
#endif
