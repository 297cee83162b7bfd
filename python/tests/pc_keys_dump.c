/* SPDX-License-Identifier: MIT */
/* The layer keys examples/pc_keys.h derives for 4 layers x 3 blocks of 16
 * tokens (request seed 1), hex, layer-major: test_nkv.py checks that the
 * Python helper (nkv.kvcache) derives the same. usage: pc_keys_dump 16|32 */
#include "pc_keys.h"

int main(int argc, char **argv)
{
	struct pc_chain c = { 16, 4, 3, 16, 65536, 0 };
	uint8_t keys[4 * 3 * 32];
	uint32_t i, j;

	if (argc > 1)
		c.klen = (uint32_t)atoi(argv[1]);
	if ((c.klen != 16 && c.klen != 32) || pc_chain_keys(&c, 1, 0, keys))
		return 2;
	for (i = 0; i < c.layers * c.blocks; i++) {
		for (j = 0; j < c.klen; j++)
			printf("%02x", keys[i * c.klen + j]);
		printf("\n");
	}
	return 0;
}
