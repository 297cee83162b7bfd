// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nkv_p2pexp.ko - a test-only dma-buf exporter for tests/vm/run.sh, built
 * for the guest kernel and never installed.
 *
 * It binds QEMU's ivshmem-plain device (1af4:1110), whose BAR2 is a 64-bit
 * prefetchable window onto a file of the host, and exports ranges of that
 * BAR as dma-bufs the way GPU drivers export VRAM: no struct pages behind
 * it, each importer's device address of the BAR from dma_map_resource(),
 * a scatterlist that carries DMA addresses only, and attachments refused
 * unless the importer can take peer-to-peer addresses. /dev/nkv_p2pexp's
 * ioctls make a dma-buf fd for (offset, len) of the BAR, and revoke one
 * (move_notify to its importers, as on a GPU reset).
 *
 * Two switches (module parameters, writable at run time) make it
 * misbehave the ways an importer must survive:
 *   refuse_p2p  every attachment fails (a device the importer cannot
 *               reach peer-to-peer);
 *   sysmem      mappings silently hand back pages of system RAM instead of
 *               the BAR (an exporter that migrated VRAM to system memory).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "nkv_p2pexp.h"

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("DMA_BUF");
#else
MODULE_IMPORT_NS(DMA_BUF);
#endif

static bool refuse_p2p;
module_param(refuse_p2p, bool, 0644);
MODULE_PARM_DESC(refuse_p2p, "Fail every attachment, as for an unreachable peer (default N)");

static bool sysmem;
module_param(sysmem, bool, 0644);
MODULE_PARM_DESC(sysmem, "Map system RAM instead of the BAR, silently (default N)");

/* Scatterlist segments of the BAR: several per buffer, as VRAM has. */
#define PE_SEG SZ_64K

struct pe_dev {
	struct pci_dev *pdev;
	resource_size_t bar;
	resource_size_t bar_len;
	struct miscdevice misc;
};

/* One exported range; holds the PCI device. */
struct pe_buf {
	struct pci_dev *pdev;
	resource_size_t phys;
	size_t len;
};

/* One mapping for one importer: BAR segments, or RAM pages (sysmem). */
struct pe_sgt {
	struct sg_table sgt;
	bool ram;
};

static int pe_attach(struct dma_buf *buf, struct dma_buf_attachment *a)
{
	if (READ_ONCE(refuse_p2p) || !a->peer2peer)
		return -EOPNOTSUPP;
	return 0;
}

static void pe_unmap_bar(struct dma_buf_attachment *a, struct sg_table *sgt, unsigned int n,
			 enum dma_data_direction dir)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sg(sgt->sgl, sg, n, i)
		dma_unmap_resource(a->dev, sg_dma_address(sg), sg_dma_len(sg), dir,
				   DMA_ATTR_SKIP_CPU_SYNC);
}

/* The BAR range, DMA side only: the CPU side has no pages. */
static int pe_map_bar(struct dma_buf_attachment *a, struct pe_buf *b, struct sg_table *sgt,
		      enum dma_data_direction dir)
{
	unsigned int n = DIV_ROUND_UP(b->len, PE_SEG), i;
	struct scatterlist *sg;
	size_t off = 0;
	int ret;

	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (ret)
		return ret;
	for_each_sgtable_sg(sgt, sg, i) {
		size_t l = min_t(size_t, PE_SEG, b->len - off);
		dma_addr_t d = dma_map_resource(a->dev, b->phys + off, l, dir,
						DMA_ATTR_SKIP_CPU_SYNC);

		if (dma_mapping_error(a->dev, d)) {
			pe_unmap_bar(a, sgt, i, dir);
			sg_free_table(sgt);
			return -EIO;
		}
		sg_set_page(sg, NULL, l, 0);
		sg_dma_address(sg) = d;
		sg_dma_len(sg) = l;
		off += l;
	}
	return 0;
}

static void pe_free_pages(struct sg_table *sgt)
{
	struct scatterlist *sg;
	int i;

	for_each_sgtable_sg(sgt, sg, i)
		if (sg_page(sg))
			__free_page(sg_page(sg));
}

/* The lie: as many pages of RAM, DMA-mapped like any system memory. */
static int pe_map_ram(struct dma_buf_attachment *a, struct pe_buf *b, struct sg_table *sgt,
		      enum dma_data_direction dir)
{
	struct scatterlist *sg;
	int ret, i;

	ret = sg_alloc_table(sgt, b->len >> PAGE_SHIFT, GFP_KERNEL);
	if (ret)
		return ret;
	for_each_sgtable_sg(sgt, sg, i) {
		struct page *pg = alloc_page(GFP_KERNEL | __GFP_ZERO);

		if (!pg) {
			ret = -ENOMEM;
			goto free;
		}
		sg_set_page(sg, pg, PAGE_SIZE, 0);
	}
	ret = dma_map_sgtable(a->dev, sgt, dir, 0);
	if (!ret)
		return 0;
free:
	pe_free_pages(sgt);
	sg_free_table(sgt);
	return ret;
}

static struct sg_table *pe_map(struct dma_buf_attachment *a, enum dma_data_direction dir)
{
	struct pe_buf *b = a->dmabuf->priv;
	struct pe_sgt *p = kzalloc(sizeof(*p), GFP_KERNEL);
	int ret;

	if (!p)
		return ERR_PTR(-ENOMEM);
	p->ram = READ_ONCE(sysmem);
	ret = p->ram ? pe_map_ram(a, b, &p->sgt, dir) : pe_map_bar(a, b, &p->sgt, dir);
	if (ret) {
		kfree(p);
		return ERR_PTR(ret);
	}
	return &p->sgt;
}

static void pe_unmap(struct dma_buf_attachment *a, struct sg_table *sgt,
		     enum dma_data_direction dir)
{
	struct pe_sgt *p = container_of(sgt, struct pe_sgt, sgt);

	if (p->ram) {
		dma_unmap_sgtable(a->dev, sgt, dir, 0);
		pe_free_pages(sgt);
	} else {
		pe_unmap_bar(a, sgt, sgt->nents, dir);
	}
	sg_free_table(sgt);
	kfree(p);
}

static void pe_release(struct dma_buf *buf)
{
	struct pe_buf *b = buf->priv;

	pci_dev_put(b->pdev);
	kfree(b);
}

static const struct dma_buf_ops pe_ops = {
	.attach = pe_attach,
	.map_dma_buf = pe_map,
	.unmap_dma_buf = pe_unmap,
	.release = pe_release,
};

static long pe_export(struct pe_dev *pd, struct nkv_p2pexp_req *req)
{
	DEFINE_DMA_BUF_EXPORT_INFO(ei);
	struct dma_buf *buf;
	struct pe_buf *b;
	int fd;

	if (req->rsvd || !req->len || !PAGE_ALIGNED(req->offset | req->len) ||
	    req->offset >= pd->bar_len || req->len > pd->bar_len - req->offset)
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->pdev = pci_dev_get(pd->pdev);
	b->phys = pd->bar + req->offset;
	b->len = req->len;
	ei.ops = &pe_ops;
	ei.size = req->len;
	ei.flags = O_RDWR;
	ei.priv = b;
	buf = dma_buf_export(&ei);
	if (IS_ERR(buf)) {
		pci_dev_put(b->pdev);
		kfree(b);
		return PTR_ERR(buf);
	}
	fd = dma_buf_fd(buf, O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(buf);	/* releases b */
		return fd;
	}
	req->fd = fd;
	return 0;
}

/* Only this exporter's own buffers; move_notify under their lock. */
static long pe_revoke(int fd)
{
	struct dma_buf *buf = dma_buf_get(fd);

	if (IS_ERR(buf))
		return PTR_ERR(buf);
	if (buf->ops != &pe_ops) {
		dma_buf_put(buf);
		return -EINVAL;
	}
	dma_resv_lock(buf->resv, NULL);
	dma_buf_move_notify(buf);
	dma_resv_unlock(buf->resv);
	dma_buf_put(buf);
	return 0;
}

static long pe_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct pe_dev *pd = container_of(file->private_data, struct pe_dev, misc);
	struct nkv_p2pexp_req req;
	long ret;

	if (cmd == NKV_P2PEXP_REVOKE)
		return pe_revoke((int)arg);
	if (cmd != NKV_P2PEXP_EXPORT)
		return -ENOTTY;
	if (copy_from_user(&req, (void __user *)arg, sizeof(req)))
		return -EFAULT;
	ret = pe_export(pd, &req);
	if (!ret && copy_to_user((void __user *)arg, &req, sizeof(req)))
		ret = -EFAULT;	/* the fd stays the caller's to close */
	return ret;
}

static const struct file_operations pe_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = pe_ioctl,
	.llseek = noop_llseek,
};

static int pe_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct pe_dev *pd;
	int ret;

	if (!(pci_resource_flags(pdev, 2) & IORESOURCE_MEM) || !pci_resource_len(pdev, 2))
		return -ENODEV;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pd = devm_kzalloc(&pdev->dev, sizeof(*pd), GFP_KERNEL);
	if (!pd)
		return -ENOMEM;
	pd->pdev = pdev;
	pd->bar = pci_resource_start(pdev, 2);
	pd->bar_len = pci_resource_len(pdev, 2);
	pd->misc.minor = MISC_DYNAMIC_MINOR;
	pd->misc.name = KBUILD_MODNAME;
	pd->misc.fops = &pe_fops;
	pd->misc.parent = &pdev->dev;
	pd->misc.mode = 0600;
	ret = misc_register(&pd->misc);
	if (ret)
		return ret;
	pci_set_drvdata(pdev, pd);
	dev_info(&pdev->dev, "BAR2 %pa bytes at %pa exported as /dev/%s\n", &pd->bar_len,
		 &pd->bar, KBUILD_MODNAME);
	return 0;
}

static void pe_remove(struct pci_dev *pdev)
{
	struct pe_dev *pd = pci_get_drvdata(pdev);

	misc_deregister(&pd->misc);
}

static const struct pci_device_id pe_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x1110) },	/* QEMU ivshmem */
	{ }
};
MODULE_DEVICE_TABLE(pci, pe_ids);

static struct pci_driver pe_driver = {
	.name = KBUILD_MODNAME,
	.id_table = pe_ids,
	.probe = pe_probe,
	.remove = pe_remove,
};
module_pci_driver(pe_driver);

MODULE_DESCRIPTION("nkv test only: QEMU ivshmem BAR exported as dma-bufs, like VRAM");
MODULE_LICENSE("Dual MIT/GPL");
