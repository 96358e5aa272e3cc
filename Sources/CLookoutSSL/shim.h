#ifndef CLOOKOUT_SSL_SHIM_H
#define CLOOKOUT_SSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#endif
