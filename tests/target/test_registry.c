/* SPDX-License-Identifier: MIT */
/*
 * test_registry.c - the backend registry: the table, find, create through
 * it, and the errors a command line can provoke (no cluster needed: the
 * rados backend parses its options before it connects).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "target/backends/registry.h"

static char err[256];

static struct nkv_be_conf conf_of(const struct nkv_be_param *p, size_t n)
{
	struct nkv_be_conf c = { .size = sizeof(c), .params = p, .nparams = n };

	return c;
}

Test(registry, table_lists_mem_rados_rocksdb_and_nvmf)
{
	const struct nkv_be_type *const *t = nkv_be_types();
	const struct nkv_be_optdesc *d;
	int n;

	for (n = 0; t[n]; n++) {
		cr_assert(t[n]->name && t[n]->summary && t[n]->create, "type %d", n);
		for (d = t[n]->opts; d && d->name; d++)
			cr_assert(d->metavar && d->help, "%s --%s", t[n]->name, d->name);
	}
	cr_assert_eq(n, 4);
	cr_assert_str_eq(t[0]->name, "mem");
	cr_assert_str_eq(t[1]->name, "rados");
	cr_assert_str_eq(t[2]->name, "rocksdb");
	cr_assert_str_eq(t[3]->name, "nvmf");
}

Test(registry, find)
{
	cr_assert_eq(nkv_be_type_find("mem"), &nkv_be_type_mem);
	cr_assert_eq(nkv_be_type_find("rados"), &nkv_be_type_rados);
	cr_assert_eq(nkv_be_type_find("nvmf"), &nkv_be_type_nvmf);
	cr_assert_null(nkv_be_type_find("nope"));
	cr_assert_null(nkv_be_type_find(NULL));
}

Test(registry, create_mem_kv_and_nvm)
{
	struct nkv_be_conf c = conf_of(NULL, 0);
	struct nkv_be *be;

	c.capacity = 1 << 20;
	c.max_value = 4096;
	c.max_keys = 7;
	c.ns_name = "label";
	be = nkv_be_create("mem", &c, err, sizeof(err));
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be->csi, NKV_CSI_KV);
	cr_assert_eq(be->capacity, 1 << 20);
	cr_assert_eq(be->max_value, 4096);
	cr_assert_eq(be->max_keys, 7);
	cr_assert_str_eq(be->ops->name, "mem");
	be->ops->destroy(be);

	c = conf_of(NULL, 0);
	c.nvm = 1;
	c.capacity = 1 << 16;
	c.block_size = 512;
	be = nkv_be_create("mem", &c, err, sizeof(err));
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be->csi, NKV_CSI_NVM);
	cr_assert_eq(be->block_size, 512);
	cr_assert_eq(be->capacity, 128);
	be->ops->destroy(be);
}

Test(registry, unknown_type_names_the_available_ones)
{
	struct nkv_be_conf c = conf_of(NULL, 0);

	cr_assert_null(nkv_be_create("disk", &c, err, sizeof(err)));
	cr_assert_str_eq(err, "unknown backend 'disk' (available: mem, rados, rocksdb, nvmf)");
	cr_assert_eq(nkv_be_conf_check("disk", &c, err, sizeof(err)), -ENOENT);
	cr_assert_str_eq(err, "unknown backend 'disk' (available: mem, rados, rocksdb, nvmf)");
}

Test(registry, undeclared_option_refused_by_name)
{
	static const struct nkv_be_param p[] = { { "pool", "x" } };
	struct nkv_be_conf c = conf_of(p, 1);

	cr_assert_null(nkv_be_create("mem", &c, err, sizeof(err)));
	cr_assert_str_eq(err, "option --pool is not an option of the mem backend (it takes: --evict)");
	cr_assert_eq(nkv_be_conf_check("mem", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "--pool"), "%s", err);
}

Test(registry, undeclared_rados_option_lists_what_it_takes)
{
	static const struct nkv_be_param p[] = { { "pool", "kvpool" }, { "capacity", "1G" } };
	struct nkv_be_conf c = conf_of(p, 2);

	cr_assert_eq(nkv_be_conf_check("rados", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "option --capacity is not an option of the rados backend (it takes: "
			      "--pool, --conf, --id, --keyring, --op-timeout"), "%s", err);
}

Test(registry, rados_bad_integer_refused_before_connecting)
{
	static const struct nkv_be_param p[] = { { "op-timeout", "10" }, { "op-timeout", "ten" } };
	static const struct nkv_be_param q[] = { { "mount-timeout", "-1" } };
	struct nkv_be_conf c = conf_of(p, 2);

	cr_assert_null(nkv_be_create("rados", &c, err, sizeof(err)));
	cr_assert_str_eq(err, "bad value 'ten' for --op-timeout");
	cr_assert_eq(nkv_be_conf_check("rados", &c, err, sizeof(err)), -EINVAL);
	c = conf_of(q, 1);
	cr_assert_eq(nkv_be_conf_check("rados", &c, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "bad value '-1' for --mount-timeout");
	c = conf_of(p, 1);
	cr_assert_eq(nkv_be_conf_check("rados", &c, err, sizeof(err)), 0, "%s", err);
	c.nvm = 1;
	cr_assert_eq(nkv_be_conf_check("rados", &c, err, sizeof(err)), -EINVAL);
}

Test(registry, mem_bad_geometry_refused_with_a_reason)
{
	struct nkv_be_conf c = conf_of(NULL, 0);

	c.capacity = 1ull << 62;
	c.max_value = 1 << 20;
	cr_assert_null(nkv_be_create("mem", &c, err, sizeof(err)));
	cr_assert_eq(errno, EINVAL);
	cr_assert(strstr(err, "mem backend: capacity is larger than"), "%s", err);
	c.nvm = 1;
	c.capacity = 1000;
	c.block_size = 4096;
	cr_assert_null(nkv_be_create("mem", &c, err, sizeof(err)));
	cr_assert(strstr(err, "capacity is less than one block"), "%s", err);
	c.capacity = 1 << 20;
	c.block_size = 1000;
	cr_assert_null(nkv_be_create("mem", &c, err, sizeof(err)));
	cr_assert(strstr(err, "block size is not a power of two"), "%s", err);
}

Test(registry, conf_get_last_wins)
{
	static const struct nkv_be_param p[] = { { "pool", "a" }, { "id", "x" }, { "pool", "b" } };
	struct nkv_be_conf c = conf_of(p, 3);

	cr_assert_str_eq(nkv_be_conf_get(&c, "pool"), "b");
	cr_assert_str_eq(nkv_be_conf_get(&c, "id"), "x");
	cr_assert_null(nkv_be_conf_get(&c, "conf"));
	cr_assert_null(nkv_be_conf_get(NULL, "pool"));
}

Test(registry, old_conf_refused)
{
	struct nkv_be_conf c = { .size = sizeof(c) - 1 };

	errno = 0;
	cr_assert_null(nkv_be_create("mem", &c, err, sizeof(err)));
	cr_assert_eq(errno, EINVAL);
	cr_assert(strstr(err, "older build"), "%s", err);
	errno = 0;
	cr_assert_null(nkv_be_create("mem", NULL, err, sizeof(err)));
	cr_assert_eq(errno, EINVAL);
}

/* conf.read_only (--ns-map N=NAME:ro) reaches every backend made here:
 * the core refuses the writes. */
Test(registry, read_only_set_on_the_backend)
{
	struct nkv_be_conf c = conf_of(NULL, 0);
	struct nkv_be *be;

	be = nkv_be_create("mem", &c, err, sizeof(err));
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be->read_only, 0);
	cr_assert_eq(be->store_opts, NKV_STORE_VENDOR_MASK);
	be->ops->destroy(be);
	c.read_only = 1;
	be = nkv_be_create("mem", &c, err, sizeof(err));
	cr_assert_not_null(be, "%s", err);
	cr_assert_eq(be->read_only, 1);
	be->ops->destroy(be);
}
