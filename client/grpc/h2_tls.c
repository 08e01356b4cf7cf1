/*
 * h2_tls.c: the TLS side of the transport: an OpenSSL context for the
 * listeners, which offers ALPN "h2" and, for browsers' gRPC-Web and
 * WebSocket, "http/1.1".
 *
 * HTTP/2 over TLS needs TLS 1.2 or later with an AEAD cipher (RFC 9113
 * 9.2); a client whose ALPN list has neither is refused in the handshake
 * (no_application_protocol); one that sends no ALPN is told by its first
 * bytes, as on a plaintext socket.
 */
#include "h2_internal.h"

#include <stdio.h>
#include <string.h>
#include <openssl/err.h>

/* ours, preferred first */
static const unsigned char alpn_ours[] = "\x02h2\x08http/1.1";

/* Picks "h2", else "http/1.1", from the client's ALPN list, or refuses the handshake. */
static int
SelectAlpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		   const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char *chosen;

	if (SSL_select_next_proto(&chosen, outlen, alpn_ours, sizeof(alpn_ours) - 1, in, inlen)
		!= OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = chosen;
	return SSL_TLSEXT_ERR_OK;
}

/* Sets err to what OpenSSL last reported, after what. */
static void
TlsError(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();
	char		buf[256];

	ERR_error_string_n(e, buf, sizeof(buf));
	snprintf(err, errlen, "%s: %s", what, e ? buf : "unknown error");
	ERR_clear_error();
}

SSL_CTX *
h2_tls_context(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
	SSL_CTX    *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL)
	{
		TlsError(err, errlen, "could not create a TLS context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
						SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* TLS 1.2: only the AEAD suites HTTP/2 allows */
	SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20");
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
					 SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
	{
		TlsError(err, errlen, "could not load the certificate chain");
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
		SSL_CTX_check_private_key(ctx) != 1)
	{
		TlsError(err, errlen, "could not load the private key");
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_alpn_select_cb(ctx, SelectAlpn, NULL);
	return ctx;
}

/* What ALPN agreed: 2 for "h2", 1 for "http/1.1", 0 for nothing. */
int
h2_tls_alpn(SSL *ssl)
{
	const unsigned char *p = NULL;
	unsigned int len = 0;

	SSL_get0_alpn_selected(ssl, &p, &len);
	if (len == 2 && memcmp(p, "h2", 2) == 0)
		return 2;
	return len == 8 && memcmp(p, "http/1.1", 8) == 0 ? 1 : 0;
}
