/* SPDX-License-Identifier: MIT */
/* gpu_none.c - nkv-bench built without a GPU runtime: no GPU engine. */
#include <errno.h>
#include <stdio.h>

#include "gpu.h"

int nkv_bench_gpu_probe(uint32_t *wave_size, char *why, size_t whylen)
{
	*wave_size = 0;
	snprintf(why, whylen, "this nkv-bench was built without a GPU runtime "
		 "(build it with `make GPU=cuda` or `make GPU=hip`)");
	return -ENODEV;
}

int nkv_bench_gpu_launch(struct nkv_dev_qp *const *qps, const struct nkv_bk_args *args,
			 uint32_t nq, uint32_t batch, const struct nkv_bench_gpu_range *ranges,
			 uint32_t nranges, char *err, size_t errlen)
{
	uint32_t w;

	(void)qps;
	(void)args;
	(void)nq;
	(void)batch;
	(void)ranges;
	(void)nranges;
	return nkv_bench_gpu_probe(&w, err, errlen);
}
