/* SPDX-License-Identifier: MIT */
/*
 * digest.c - SHA-256 of a module's bytes, by OpenSSL's libcrypto (the
 * library nkv-bench's --key-order sha256 already links).
 */
#include <openssl/evp.h>

#include "exec.h"

void nkv_exec_sha256(const void *p, size_t len, uint8_t out[NKV_EXEC_DIGEST_LEN])
{
	unsigned int n = NKV_EXEC_DIGEST_LEN;

	EVP_Digest(p, len, out, &n, EVP_sha256(), NULL);
}
