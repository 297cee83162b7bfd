// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nkv.ko - hand a whole PCIe NVMe controller to one user-space process.
 *
 * The driver binds only through driver_override (it has no ID table), so a
 * controller moves here only when an administrator asks. Per bound
 * controller it creates /dev/nkv<N>, through which one process at a time
 *  - mmaps BAR0 uncached (registers and the doorbells at 0x1000+),
 *  - pins and DMA-maps its memory, receiving one device address per 4 KiB,
 *  - and, by closing the file or dying, gets the controller disabled and
 *    bus mastering turned off before any of its pages is unpinned, so the
 *    device can never DMA into memory that was given back to the system.
 *
 * The uapi (ioctl numbers and structures) is include/nkv_kmod.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/iommu.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nvme.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "nkv_kmod.h"

#define NKV_CLASS_NVME 0x010802

static unsigned int max_pinned_mb = 1024;
module_param(max_pinned_mb, uint, 0644);
MODULE_PARM_DESC(max_pinned_mb, "Memory one open file may pin, MiB (default 1024)");

static DEFINE_IDA(nkv_ida);

struct nkv_file;

/*
 * One bound controller. Lives until both the driver (remove) and the open
 * file (release) let go of it, so an unbind while the file is open is safe.
 */
struct nkv_dev {
	struct kref ref;
	struct pci_dev *pdev;
	void __iomem *bar;
	resource_size_t bar_start;
	resource_size_t bar_len;
	struct miscdevice misc;
	char name[16];
	int id;
	/* Write-held by remove, open and release, read-held by ioctl. */
	struct rw_semaphore lock;
	/*
	 * Write-held by remove, read-held by BAR page faults; separate from
	 * lock because faults run under mmap_lock, which ioctl takes inside
	 * lock when pinning.
	 */
	struct rw_semaphore bar_lock;
	bool gone;		/* unbound: every call returns -ENODEV */
	struct nkv_file *file;	/* the one open file, or NULL */
};

/* One pinned and DMA-mapped range. */
struct nkv_map {
	struct page **pages;
	unsigned long npages;
	struct sg_table sgt;
};

struct nkv_file {
	struct nkv_dev *nd;
	struct address_space *mapping;	/* to zap BAR mmaps on unbind */
	struct mm_struct *mm;		/* pinned pages are charged here */
	struct mutex lock;		/* maps and pinned */
	struct xarray maps;		/* handle -> struct nkv_map */
	u64 pinned;			/* bytes */
};

static void nkv_dev_free(struct kref *ref)
{
	struct nkv_dev *nd = container_of(ref, struct nkv_dev, ref);

	ida_free(&nkv_ida, nd->id);
	pci_dev_put(nd->pdev);
	kfree(nd);
}

/*
 * Disable the controller: CC.EN = 0, then wait up to CAP.TO for
 * CSTS.RDY = 0. After this the controller fetches no command and moves no
 * data. A controller that reads all-ones has fallen off the bus.
 */
static int nkv_ctrl_disable(struct nkv_dev *nd)
{
	u64 cap = lo_hi_readq(nd->bar + NVME_REG_CAP);
	unsigned long deadline;
	u32 cc, csts;

	cc = readl(nd->bar + NVME_REG_CC);
	if (cc == ~0U)
		return -ENODEV;
	if (cc & NVME_CC_ENABLE)
		writel(cc & ~NVME_CC_ENABLE, nd->bar + NVME_REG_CC);
	/* CAP.TO counts 500 ms units; one more unit of slack. */
	deadline = jiffies + (NVME_CAP_TIMEOUT(cap) + 1) * HZ / 2;
	for (;;) {
		csts = readl(nd->bar + NVME_REG_CSTS);
		if (csts == ~0U)
			return -ENODEV;
		if (!(csts & NVME_CSTS_RDY))
			return 0;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		usleep_range(1000, 2000);
	}
}

/* Stop all device DMA: controller off, then bus mastering off. */
static void nkv_quiesce(struct nkv_dev *nd)
{
	int ret = nkv_ctrl_disable(nd);

	if (ret)
		dev_err(&nd->pdev->dev, "controller did not stop (%d); bus mastering off anyway\n",
			ret);
	pci_clear_master(nd->pdev);
	dev_info(&nd->pdev->dev, "controller quiesced\n");
}

/* Return pinned pages to the owner's locked_vm unless its mm is gone. */
static void nkv_unaccount(struct mm_struct *mm, unsigned long npages)
{
	if (npages && mmget_not_zero(mm)) {
		account_locked_vm(mm, npages, false);
		mmput(mm);
	}
}

static void nkv_map_release(struct nkv_dev *nd, struct nkv_map *m)
{
	dma_unmap_sgtable(&nd->pdev->dev, &m->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(&m->sgt);
	unpin_user_pages_dirty_lock(m->pages, m->npages, true);
	kvfree(m->pages);
	kfree(m);
}

/* Give back every mapping of @nf. The device must be quiesced already. */
static void nkv_file_release_maps(struct nkv_file *nf)
{
	struct nkv_map *m;
	unsigned long idx;
	unsigned long npages = 0;

	mutex_lock(&nf->lock);
	xa_for_each(&nf->maps, idx, m) {
		xa_erase(&nf->maps, idx);
		npages += m->npages;
		nkv_map_release(nf->nd, m);
	}
	nf->pinned = 0;
	mutex_unlock(&nf->lock);
	nkv_unaccount(nf->mm, npages);
}

static int nkv_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct nkv_dev *nd = container_of(misc, struct nkv_dev, misc);
	struct nkv_file *nf;
	int ret = 0;

	nf = kzalloc(sizeof(*nf), GFP_KERNEL);
	if (!nf)
		return -ENOMEM;
	mutex_init(&nf->lock);
	xa_init_flags(&nf->maps, XA_FLAGS_ALLOC1);

	down_write(&nd->lock);
	if (nd->gone)
		ret = -ENODEV;
	else if (nd->file)
		ret = -EBUSY;	/* one owner per controller */
	if (ret) {
		up_write(&nd->lock);
		kfree(nf);
		return ret;
	}
	/*
	 * misc_open holds misc_mtx, which remove's misc_deregister also
	 * takes, so nd cannot be freed before this reference is taken.
	 */
	kref_get(&nd->ref);
	nf->nd = nd;
	nf->mapping = file->f_mapping;
	nf->mm = current->mm;
	mmgrab(nf->mm);
	nd->file = nf;
	pci_set_master(nd->pdev);
	up_write(&nd->lock);

	file->private_data = nf;
	return 0;
}

static int nkv_release(struct inode *inode, struct file *file)
{
	struct nkv_file *nf = file->private_data;
	struct nkv_dev *nd = nf->nd;

	down_write(&nd->lock);
	/* On unbind, remove() already quiesced and released everything. */
	if (!nd->gone) {
		nkv_quiesce(nd);
		nkv_file_release_maps(nf);
	}
	nd->file = NULL;
	up_write(&nd->lock);

	xa_destroy(&nf->maps);
	mmdrop(nf->mm);
	kfree(nf);
	kref_put(&nd->ref, nkv_dev_free);
	return 0;
}

static long nkv_ioc_info(struct nkv_file *nf, void __user *uarg)
{
	struct nkv_dev *nd = nf->nd;
	struct pci_dev *pdev = nd->pdev;
	struct nkv_kmod_info info = {
		.abi = NKV_KMOD_ABI,
		.bar0_size = nd->bar_len,
		.domain = pci_domain_nr(pdev->bus),
		.bus = pdev->bus->number,
		.dev = PCI_SLOT(pdev->devfn),
		.fn = PCI_FUNC(pdev->devfn),
		.vendor = pdev->vendor,
		.device = pdev->device,
		.class_code = pdev->class,
		.pin_limit = (u64)max_pinned_mb << 20,
	};

	if (device_iommu_mapped(&pdev->dev))
		info.flags |= NKV_KMOD_INFO_IOMMU;
	mutex_lock(&nf->lock);
	info.pinned = nf->pinned;
	mutex_unlock(&nf->lock);
	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

static int nkv_map_check(const struct nkv_kmod_map *req)
{
	if (req->flags || req->rsvd || !req->len || !req->iova_ptr)
		return -EINVAL;
	if (!PAGE_ALIGNED(req->addr) || !PAGE_ALIGNED(req->len))
		return -EINVAL;
	if (req->npages != req->len >> NKV_KMOD_PAGE_SHIFT)
		return -EINVAL;
	if (req->addr + req->len < req->addr)
		return -EINVAL;
	return 0;
}

/* Pin all pages of the range for long-term device writes, or none. */
static int nkv_pin(struct nkv_map *m, u64 addr)
{
	unsigned long done = 0;
	int ret;

	while (done < m->npages) {
		/* The page count argument is an int: pin in chunks. */
		ret = pin_user_pages_fast(addr + (done << PAGE_SHIFT),
					  min_t(unsigned long, m->npages - done, SZ_1M),
					  FOLL_WRITE | FOLL_LONGTERM,
					  m->pages + done);
		if (ret <= 0) {
			unpin_user_pages(m->pages, done);
			return ret ? ret : -EFAULT;
		}
		done += ret;
	}
	return 0;
}

/* Write the device address of each 4 KiB page to the user's array. */
static int nkv_map_export(struct nkv_map *m, u64 __user *uiova, u32 *flags)
{
	struct scatterlist *sg;
	unsigned long n = 0;
	u64 first = 0;
	bool contig = true;
	int i;

	for_each_sgtable_dma_sg(&m->sgt, sg, i) {
		dma_addr_t a = sg_dma_address(sg);
		unsigned int off;

		for (off = 0; off < sg_dma_len(sg); off += NKV_KMOD_PAGE_SIZE) {
			u64 iova = a + off;

			if (n == 0)
				first = iova;
			else if (iova != first + ((u64)n << NKV_KMOD_PAGE_SHIFT))
				contig = false;
			if (n >= m->npages || put_user(iova, uiova + n))
				return -EFAULT;
			n++;
		}
	}
	if (n != m->npages)
		return -EFAULT;
	*flags = contig ? NKV_KMOD_MAP_CONTIGUOUS : 0;
	return 0;
}

/* Build, pin and DMA-map one range; on error nothing is left behind. */
static struct nkv_map *nkv_map_create(struct nkv_dev *nd, const struct nkv_kmod_map *req,
				      u32 *flags)
{
	struct nkv_map *m;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->npages = req->npages;
	m->pages = kvmalloc_array(m->npages, sizeof(*m->pages), GFP_KERNEL);
	ret = -ENOMEM;
	if (!m->pages)
		goto free_map;
	ret = nkv_pin(m, req->addr);
	if (ret)
		goto free_pages;
	ret = sg_alloc_table_from_pages(&m->sgt, m->pages, m->npages, 0, req->len,
					GFP_KERNEL);
	if (ret)
		goto unpin;
	ret = dma_map_sgtable(&nd->pdev->dev, &m->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		goto free_sgt;
	ret = nkv_map_export(m, u64_to_user_ptr(req->iova_ptr), flags);
	if (ret)
		goto unmap;
	return m;

unmap:
	dma_unmap_sgtable(&nd->pdev->dev, &m->sgt, DMA_BIDIRECTIONAL, 0);
free_sgt:
	sg_free_table(&m->sgt);
unpin:
	unpin_user_pages(m->pages, m->npages);
free_pages:
	kvfree(m->pages);
free_map:
	kfree(m);
	return ERR_PTR(ret);
}

/* Reserve @bytes of the file's pin budget and the process's locked_vm. */
static int nkv_pin_budget(struct nkv_file *nf, u64 bytes)
{
	u64 limit = (u64)max_pinned_mb << 20;
	int ret;

	if (bytes > limit || nf->pinned > limit - bytes)
		return -E2BIG;
	ret = account_locked_vm(nf->mm, bytes >> PAGE_SHIFT, true);
	if (ret)
		return ret;
	nf->pinned += bytes;
	return 0;
}

static void nkv_pin_unbudget(struct nkv_file *nf, u64 bytes)
{
	nf->pinned -= bytes;
	nkv_unaccount(nf->mm, bytes >> PAGE_SHIFT);
}

static long nkv_ioc_map(struct nkv_file *nf, void __user *uarg)
{
	struct nkv_kmod_map req;
	struct nkv_map *m;
	u32 id, flags = 0;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	ret = nkv_map_check(&req);
	if (ret)
		return ret;
	if (current->mm != nf->mm)
		return -EPERM;	/* pins are charged to the opener */

	mutex_lock(&nf->lock);
	ret = nkv_pin_budget(nf, req.len);
	if (ret)
		goto out;
	m = nkv_map_create(nf->nd, &req, &flags);
	if (IS_ERR(m)) {
		ret = PTR_ERR(m);
		goto unbudget;
	}
	ret = xa_alloc(&nf->maps, &id, m, xa_limit_31b, GFP_KERNEL);
	if (ret)
		goto release;
	req.handle = id;
	req.flags = flags;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		xa_erase(&nf->maps, id);
		ret = -EFAULT;
		goto release;
	}
	mutex_unlock(&nf->lock);
	return 0;

release:
	nkv_map_release(nf->nd, m);
unbudget:
	nkv_pin_unbudget(nf, req.len);
out:
	mutex_unlock(&nf->lock);
	return ret;
}

static long nkv_ioc_unmap(struct nkv_file *nf, void __user *uarg)
{
	struct nkv_kmod_unmap req;
	struct nkv_map *m;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (!req.handle || req.handle > U32_MAX)
		return -EINVAL;
	mutex_lock(&nf->lock);
	m = xa_erase(&nf->maps, req.handle);
	if (m) {
		nkv_pin_unbudget(nf, (u64)m->npages << PAGE_SHIFT);
		nkv_map_release(nf->nd, m);
	}
	mutex_unlock(&nf->lock);
	return m ? 0 : -EINVAL;
}

/*
 * Seam for importing a dma-buf (VRAM) as DMA memory: attach dynamically
 * with peer-to-peer allowed, check the attachment really is peer-to-peer
 * (an exporter may silently fall back to system memory), map it and export
 * the addresses like nkv_map_export(). Debian's kernel has no
 * CONFIG_PCI_P2PDMA, so this is not built yet.
 */
static long nkv_ioc_dmabuf_import(struct nkv_file *nf, void __user *uarg)
{
	return -EOPNOTSUPP;
}

static long nkv_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct nkv_file *nf = file->private_data;
	void __user *uarg = (void __user *)arg;
	long ret;

	down_read(&nf->nd->lock);
	if (nf->nd->gone) {
		up_read(&nf->nd->lock);
		return -ENODEV;
	}
	switch (cmd) {
	case NKV_IOC_INFO:
		ret = nkv_ioc_info(nf, uarg);
		break;
	case NKV_IOC_MAP:
		ret = nkv_ioc_map(nf, uarg);
		break;
	case NKV_IOC_UNMAP:
		ret = nkv_ioc_unmap(nf, uarg);
		break;
	case NKV_IOC_DMABUF_IMPORT:
		ret = nkv_ioc_dmabuf_import(nf, uarg);
		break;
	default:
		ret = -ENOTTY;
	}
	up_read(&nf->nd->lock);
	return ret;
}

/*
 * BAR pages are inserted on first touch, under bar_lock, so a mapping can
 * never reach the BAR after remove() has zapped it: later touches get
 * SIGBUS. The vma holds the file, which holds nd.
 */
static vm_fault_t nkv_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct nkv_dev *nd = vma->vm_private_data;
	unsigned long pfn;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	down_read(&nd->bar_lock);
	if (!nd->gone) {
		pfn = (nd->bar_start >> PAGE_SHIFT) + vmf->pgoff;
		ret = vmf_insert_pfn_prot(vma, vmf->address, pfn, vma->vm_page_prot);
	}
	up_read(&nd->bar_lock);
	return ret;
}

static const struct vm_operations_struct nkv_vm_ops = {
	.fault = nkv_vm_fault,
};

static int nkv_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct nkv_file *nf = file->private_data;
	struct nkv_dev *nd = nf->nd;
	unsigned long len = vma->vm_end - vma->vm_start;

	if (READ_ONCE(nd->gone))
		return -ENODEV;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;	/* a private copy of registers makes no sense */
	if (vma->vm_pgoff > (nd->bar_len >> PAGE_SHIFT) ||
	    len > nd->bar_len - (vma->vm_pgoff << PAGE_SHIFT))
		return -EINVAL;
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	vma->vm_private_data = nd;
	vma->vm_ops = &nkv_vm_ops;
	return 0;
}

static const struct file_operations nkv_fops = {
	.owner = THIS_MODULE,
	.open = nkv_open,
	.release = nkv_release,
	.unlocked_ioctl = nkv_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = nkv_mmap,
	.llseek = noop_llseek,
};

static int nkv_map_bar(struct nkv_dev *nd)
{
	struct pci_dev *pdev = nd->pdev;
	int ret;

	if (!(pci_resource_flags(pdev, 0) & IORESOURCE_MEM))
		return -ENODEV;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(0), KBUILD_MODNAME);
	if (ret)
		return ret;
	nd->bar = pcim_iomap_table(pdev)[0];
	nd->bar_start = pci_resource_start(pdev, 0);
	nd->bar_len = pci_resource_len(pdev, 0);
	if (nd->bar_len < SZ_8K)
		return -ENODEV;	/* registers and at least the admin doorbells */
	return dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
}

static int nkv_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct nkv_dev *nd;
	int ret;

	/* Reached only through driver_override; still refuse non-NVMe. */
	if (pdev->class != NKV_CLASS_NVME) {
		dev_info(&pdev->dev, "class %06x is not an NVMe controller\n", pdev->class);
		return -ENODEV;
	}
	nd = kzalloc(sizeof(*nd), GFP_KERNEL);
	if (!nd)
		return -ENOMEM;
	kref_init(&nd->ref);
	init_rwsem(&nd->lock);
	init_rwsem(&nd->bar_lock);
	ret = ida_alloc(&nkv_ida, GFP_KERNEL);
	if (ret < 0) {
		kfree(nd);
		return ret;
	}
	nd->id = ret;
	nd->pdev = pci_dev_get(pdev);
	ret = nkv_map_bar(nd);
	if (ret)
		goto put;
	/* The previous driver may have left it enabled with queues live. */
	nkv_quiesce(nd);

	snprintf(nd->name, sizeof(nd->name), "nkv%d", nd->id);
	nd->misc.minor = MISC_DYNAMIC_MINOR;
	nd->misc.name = nd->name;
	nd->misc.fops = &nkv_fops;
	nd->misc.parent = &pdev->dev;
	nd->misc.mode = 0600;
	ret = misc_register(&nd->misc);
	if (ret)
		goto put;
	pci_set_drvdata(pdev, nd);
	dev_info(&pdev->dev, "bound as /dev/%s, BAR0 %pa bytes\n", nd->name, &nd->bar_len);
	return 0;

put:
	kref_put(&nd->ref, nkv_dev_free);
	return ret;
}

static void nkv_remove(struct pci_dev *pdev)
{
	struct nkv_dev *nd = pci_get_drvdata(pdev);
	struct nkv_file *nf;

	down_write(&nd->lock);
	down_write(&nd->bar_lock);
	WRITE_ONCE(nd->gone, true);
	nf = nd->file;
	if (nf) {
		/* Stop DMA first, then take the BAR away, then unpin. */
		nkv_quiesce(nd);
		unmap_mapping_range(nf->mapping, 0, 0, 1);
	}
	up_write(&nd->bar_lock);
	if (nf)
		nkv_file_release_maps(nf);
	up_write(&nd->lock);
	misc_deregister(&nd->misc);
	dev_info(&pdev->dev, "unbound%s\n", nf ? " while open" : "");
	/* pcim_* release the BAR mapping and disable the device after this. */
	kref_put(&nd->ref, nkv_dev_free);
}

static struct pci_driver nkv_driver = {
	.name = KBUILD_MODNAME,
	.id_table = NULL,	/* bind only through driver_override */
	.probe = nkv_probe,
	.remove = nkv_remove,
};

module_pci_driver(nkv_driver);

MODULE_DESCRIPTION("nkv: a PCIe NVMe controller owned by one user-space process");
MODULE_AUTHOR("nkv project");
MODULE_LICENSE("Dual MIT/GPL");
