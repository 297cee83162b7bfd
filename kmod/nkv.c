// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nkv.ko - hand a whole PCIe NVMe controller to one user-space process.
 *
 * The driver binds only through driver_override (it has no ID table), so a
 * controller moves here only when an administrator asks. Per bound
 * controller it creates /dev/nkv<N>, through which one process at a time
 *  - mmaps BAR0 uncached (registers and the doorbells at 0x1000+),
 *  - pins and DMA-maps its memory, receiving one device address per 4 KiB,
 *  - imports dma-bufs of device memory (VRAM) for peer-to-peer DMA,
 *  - and, by closing the file or dying, gets the controller disabled and
 *    bus mastering turned off before any of its pages is unpinned, so the
 *    device can never DMA into memory that was given back to the system.
 *
 * The uapi (ioctl numbers and structures) is include/nkv_kmod.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/dma-map-ops.h>
#include <linux/dma-mapping.h>
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
#include <linux/capability.h>
#include <linux/hugetlb.h>
#include <linux/list.h>
#include <linux/memremap.h>
#include <linux/scatterlist.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/swiotlb.h>
#include <linux/version.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "nkv_kmod.h"

#define NKV_CLASS_NVME 0x010802
/* Also PACKAGE_VERSION in kmod/dkms.conf (tests/vm/run.sh checks both). */
#define NKV_KMOD_VERSION "0.2"

/* Upper bound of max_pinned_mb: 64 GiB, and never more than half of RAM. */
#define NKV_MAX_PINNED_MB_CAP 65536U

static unsigned int max_pinned_mb = 1024;

static unsigned int nkv_pinned_mb_cap(void)
{
	unsigned long half = totalram_pages() >> (21 - PAGE_SHIFT);

	return min_t(unsigned long, NKV_MAX_PINNED_MB_CAP, max(half, 1UL));
}

static int nkv_set_pinned_mb(const char *val, const struct kernel_param *kp)
{
	unsigned int mb;
	int ret = kstrtouint(val, 0, &mb);

	if (ret)
		return ret;
	if (!mb || mb > nkv_pinned_mb_cap())
		return -ERANGE;
	*(unsigned int *)kp->arg = mb;
	return 0;
}

static const struct kernel_param_ops nkv_pinned_mb_ops = {
	.set = nkv_set_pinned_mb,
	.get = param_get_uint,
};

module_param_cb(max_pinned_mb, &nkv_pinned_mb_ops, &max_pinned_mb, 0644);
MODULE_PARM_DESC(max_pinned_mb,
		 "Memory one open file may pin, MiB (default 1024; 1 to min(65536, half of RAM))");

static bool allow_unsafe_dma;
module_param(allow_unsafe_dma, bool, 0644);
MODULE_PARM_DESC(allow_unsafe_dma,
		 "Let a CAP_SYS_RAWIO caller open a controller without vfio's isolation (translating IOMMU, interrupt remapping, alone in its group); taints the kernel (default N)");

static DEFINE_IDA(nkv_ida);

/* The dma-buf symbols live in a namespace, named by a string from 6.13. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define NKV_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
#else
#define NKV_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#endif
NKV_IMPORT_NS_DMA_BUF();

/* vm_flags became read-only in 6.3; vm_flags_set() replaced the |=. */
static inline void nkv_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

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
	/*
	 * Write-held by remove, reset, error handling and release; tried (never
	 * waited for) by open; read-held by ioctl only around DMA mapping, never
	 * across pinning or user copies.
	 */
	struct rw_semaphore lock;
	/*
	 * Write-held by remove, read-held by BAR page faults; separate from
	 * lock because faults run under mmap_lock, which ioctl takes inside
	 * lock when pinning.
	 */
	struct rw_semaphore bar_lock;
	bool gone;		/* unbound: every call returns -ENODEV */
	bool broken;		/* reset or bus error under the owner: -EIO */
	/* BAR0 pages of the MSI-X table and PBA, [start, end): never mapped. */
	unsigned long msix_pg[2][2];
	struct nkv_file *file;	/* the one open file, or NULL */
};

/* One pinned and DMA-mapped range: user pages, or an imported dma-buf. */
struct nkv_map {
	struct list_head retired;	/* on nkv_file.retired after UNMAP */
	struct page **pages;
	unsigned long npages;
	struct sg_table sgt;
	/* Imports only (pages is NULL): attached, pinned and mapped. */
	struct nkv_dev *nd;
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *dsgt;
};

struct nkv_file {
	struct nkv_dev *nd;
	struct address_space *mapping;	/* to zap BAR mmaps on unbind */
	struct mm_struct *mm;		/* pinned pages are charged here */
	struct mutex lock;		/* maps, retired and pinned; never held long */
	struct xarray maps;		/* handle -> struct nkv_map */
	/*
	 * Unmapped ranges: still pinned, DMA-mapped and charged until the
	 * controller is quiesced (release, reset, remove), since the owner
	 * may still have commands in flight that name them.
	 */
	struct list_head retired;
	u64 pinned;			/* bytes, live and retired */
	unsigned int imports;		/* dma-buf imports, live and retired */
	u32 flags;			/* NKV_KMOD_INFO_* found at open */
};

static void nkv_dev_free(struct kref *ref)
{
	struct nkv_dev *nd = container_of(ref, struct nkv_dev, ref);

	ida_free(&nkv_ida, nd->id);
	pci_dev_put(nd->pdev);
	kfree(nd);
}

/*
 * The longest a state change of CSTS.RDY may take, in jiffies: CAP.TO, or
 * the larger of the CRTO timeouts where the controller reports them (NVMe
 * 2.0: CAP.TO then only covers a part). All count 500 ms units; one more
 * unit of slack.
 */
static unsigned long nkv_ready_timeout(struct nkv_dev *nd, u64 cap)
{
	unsigned long units = NVME_CAP_TIMEOUT(cap);

	if (cap & (NVME_CAP_CRMS_CRWMS | NVME_CAP_CRMS_CRIMS)) {
		u32 crto = readl(nd->bar + NVME_REG_CRTO);

		if (crto != ~0U)
			units = max3(units, (unsigned long)NVME_CRTO_CRWMT(crto),
				     (unsigned long)NVME_CRTO_CRIMT(crto));
	}
	return (units + 1) * HZ / 2;
}

/* Wait for CSTS.RDY == @rdy; a controller that reads all-ones is gone. */
static int nkv_wait_ready(struct nkv_dev *nd, bool rdy, unsigned long deadline)
{
	u32 csts;

	for (;;) {
		csts = readl(nd->bar + NVME_REG_CSTS);
		if (csts == ~0U)
			return -ENODEV;
		if (!!(csts & NVME_CSTS_RDY) == rdy)
			return 0;
		if (csts & NVME_CSTS_CFS)
			return rdy ? -EIO : -ETIMEDOUT;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		usleep_range(1000, 2000);
	}
}

/*
 * Disable the controller: CC.EN = 0, then wait for CSTS.RDY = 0. A
 * controller enabled a moment ago (CC.EN = 1, RDY still 0) must reach
 * RDY = 1 first: the specification leaves clearing EN before that
 * undefined. After this the controller fetches no command and moves no
 * data.
 */
static int nkv_ctrl_disable(struct nkv_dev *nd)
{
	u64 cap = lo_hi_readq(nd->bar + NVME_REG_CAP);
	unsigned long deadline;
	u32 cc, csts;

	cc = readl(nd->bar + NVME_REG_CC);
	if (cc == ~0U)
		return -ENODEV;
	deadline = jiffies + nkv_ready_timeout(nd, cap);
	if (cc & NVME_CC_ENABLE) {
		csts = readl(nd->bar + NVME_REG_CSTS);
		if (!(csts & NVME_CSTS_RDY))
			nkv_wait_ready(nd, true, deadline);	/* then disable anyway */
		writel(cc & ~NVME_CC_ENABLE, nd->bar + NVME_REG_CC);
		deadline = jiffies + nkv_ready_timeout(nd, cap);
	}
	return nkv_wait_ready(nd, false, deadline);
}

/* Stop all device DMA: controller off, then bus mastering off. */
static void nkv_quiesce(struct nkv_dev *nd)
{
	int ret = nkv_ctrl_disable(nd);

	if (ret)
		dev_err(&nd->pdev->dev, "controller did not stop (%d); bus mastering off anyway\n",
			ret);
	pci_clear_master(nd->pdev);
	dev_dbg(&nd->pdev->dev, "controller quiesced\n");
}

/* Return pinned pages to the owner's locked_vm unless its mm is gone. */
static void nkv_unaccount(struct mm_struct *mm, unsigned long npages)
{
	if (npages && mmget_not_zero(mm)) {
		account_locked_vm(mm, npages, false);
		mmput(mm);
	}
}

/*
 * Give an import back: unmap and unpin under the buffer's reservation
 * lock, then detach. Taken inside nd->lock by release and remove, so the
 * exporter's move_notify (called with that reservation lock held) must
 * never take nd->lock.
 */
static void nkv_dmabuf_release(struct nkv_map *m)
{
	struct dma_resv *resv = m->dmabuf->resv;

	dma_resv_lock(resv, NULL);
	dma_buf_unmap_attachment(m->attach, m->dsgt, DMA_BIDIRECTIONAL);
	dma_buf_unpin(m->attach);
	dma_resv_unlock(resv);
	dma_buf_detach(m->dmabuf, m->attach);
	dma_buf_put(m->dmabuf);
	kfree(m);
}

static void nkv_map_release(struct nkv_dev *nd, struct nkv_map *m)
{
	if (m->dmabuf) {
		nkv_dmabuf_release(m);
		return;
	}
	dma_unmap_sgtable(&nd->pdev->dev, &m->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(&m->sgt);
	unpin_user_pages_dirty_lock(m->pages, m->npages, true);
	kvfree(m->pages);
	kfree(m);
}

/*
 * Give back every mapping of @nf, live and retired. The device must be
 * quiesced already: this is the only place DMA-mapped pages are unpinned.
 */
static void nkv_file_release_maps(struct nkv_file *nf)
{
	struct nkv_map *m, *tmp;
	unsigned long idx;
	LIST_HEAD(dead);
	u64 bytes;

	mutex_lock(&nf->lock);
	xa_for_each(&nf->maps, idx, m) {
		xa_erase(&nf->maps, idx);
		list_add(&m->retired, &nf->retired);
	}
	list_splice_init(&nf->retired, &dead);
	bytes = nf->pinned;
	nf->pinned = 0;
	nf->imports = 0;
	mutex_unlock(&nf->lock);
	list_for_each_entry_safe(m, tmp, &dead, retired)
		nkv_map_release(nf->nd, m);
	nkv_unaccount(nf->mm, bytes >> PAGE_SHIFT);
}

/*
 * vfio's conditions for handing a device's DMA to user space: a
 * translating IOMMU domain (not identity, not none), interrupt remapping
 * (a DMA write to the MSI window cannot inject interrupts) and no other
 * device in the IOMMU group. Returns NKV_KMOD_INFO_* of what holds.
 */
static int nkv_count_dev(struct device *dev, void *data)
{
	(*(int *)data)++;
	return 0;
}

static u32 nkv_isolation(struct pci_dev *pdev)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(&pdev->dev);
	struct iommu_group *grp;
	u32 flags = 0;
	int n = 0;

	if (dom && (dom->type & __IOMMU_DOMAIN_PAGING) && dom->type != IOMMU_DOMAIN_IDENTITY)
		flags |= NKV_KMOD_INFO_IOMMU;
	grp = iommu_group_get(&pdev->dev);
	if (grp) {
		iommu_group_for_each_dev(grp, &n, nkv_count_dev);
		if (n == 1)
			flags |= NKV_KMOD_INFO_GROUP_ALONE;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
		if (iommu_group_has_isolated_msi(grp))
			flags |= NKV_KMOD_INFO_INTR_REMAP;
#endif
		iommu_group_put(grp);
	}
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
	if (device_iommu_capable(&pdev->dev, IOMMU_CAP_INTR_REMAP))
		flags |= NKV_KMOD_INFO_INTR_REMAP;
#endif
	return flags;
}

/* DMA that bounces (swiotlb), is not coherent or cannot reach all memory. */
static const char *nkv_dma_unfit(struct pci_dev *pdev)
{
	struct device *dev = &pdev->dev;

	if (is_swiotlb_force_bounce(dev))
		return "swiotlb bounce buffering is forced (swiotlb=force or a confidential VM)";
	if (pdev->untrusted)
		return "the device is untrusted (external port): its DMA bounces";
	if (!dev_is_dma_coherent(dev))
		return "DMA is not cache-coherent";
	if (dma_addressing_limited(dev))
		return "the DMA mask does not reach all memory (it would bounce)";
	return NULL;
}

#define NKV_INFO_SAFE (NKV_KMOD_INFO_IOMMU | NKV_KMOD_INFO_INTR_REMAP | NKV_KMOD_INFO_GROUP_ALONE)

/* May the opener have the controller? Returns the info flags, or an error. */
static int nkv_may_open(struct nkv_dev *nd, u32 *flags)
{
	struct pci_dev *pdev = nd->pdev;
	const char *why = nkv_dma_unfit(pdev);
	u32 f;

	if (why) {
		dev_warn_ratelimited(&pdev->dev, "open refused: %s\n", why);
		return -EOPNOTSUPP;
	}
	f = nkv_isolation(pdev);
	if ((f & NKV_INFO_SAFE) != NKV_INFO_SAFE) {
		if (!READ_ONCE(allow_unsafe_dma) || !capable(CAP_SYS_RAWIO)) {
			dev_warn_ratelimited(&pdev->dev,
					     "open refused: %s%s%s (allow_unsafe_dma=1 and CAP_SYS_RAWIO lift this, tainting the kernel)\n",
					     f & NKV_KMOD_INFO_IOMMU ? "" : "no translating IOMMU domain; ",
					     f & NKV_KMOD_INFO_INTR_REMAP ? "" : "no interrupt remapping; ",
					     f & NKV_KMOD_INFO_GROUP_ALONE ? "" : "not alone in its IOMMU group");
			return -EPERM;
		}
		dev_warn(&pdev->dev, "opened without DMA isolation by %s[%d] (allow_unsafe_dma): tainting kernel\n",
			 current->comm, task_pid_nr(current));
		add_taint(TAINT_USER, LOCKDEP_STILL_OK);
		f |= NKV_KMOD_INFO_UNSAFE;
	}
	*flags = f;
	return 0;
}

static int nkv_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct nkv_dev *nd = container_of(misc, struct nkv_dev, misc);
	struct nkv_file *nf;
	u32 flags = 0;
	int ret = 0;

	nf = kzalloc(sizeof(*nf), GFP_KERNEL);
	if (!nf)
		return -ENOMEM;
	mutex_init(&nf->lock);
	xa_init_flags(&nf->maps, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&nf->retired);

	/*
	 * misc_open calls this under the global misc_mtx: never wait here.
	 * The lock is only ever held briefly, or by the owner's release or
	 * by remove/reset; either way the controller is not free now.
	 */
	if (!down_write_trylock(&nd->lock)) {
		kfree(nf);
		return -EBUSY;
	}
	if (nd->gone)
		ret = -ENODEV;
	else if (nd->file)
		ret = -EBUSY;	/* one owner per controller */
	else
		ret = nkv_may_open(nd, &flags);
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
	nf->flags = flags;
	nf->mapping = file->f_mapping;
	nf->mm = current->mm;
	mmgrab(nf->mm);
	nd->file = nf;
	nd->broken = false;
	pci_intx(nd->pdev, 0);	/* no handler: a shared line must stay quiet */
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

	info.flags = nf->flags;
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

/*
 * Long-term device writes are safe only to memory without a file system
 * behind it: anonymous, shmem/memfd (swap-backed) and hugetlb. A page-cache
 * page of a regular file would be written back, and maybe freed, under the
 * device. Checked on the pinned folios themselves.
 */
static bool nkv_page_pinnable(struct page *page)
{
	struct folio *folio = page_folio(page);

	return folio_test_anon(folio) || folio_test_swapbacked(folio) ||
	       folio_test_hugetlb(folio);
}

/* Pin all pages of the range for long-term device writes, or none. */
static int nkv_pin(struct nkv_map *m, u64 addr)
{
	unsigned long done = 0, i;
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
	for (i = 0; i < m->npages; i++) {
		if (!nkv_page_pinnable(m->pages[i])) {
			unpin_user_pages(m->pages, m->npages);
			pr_debug("pid %d: refused to pin file-backed memory\n",
				 task_pid_nr(current));
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

/*
 * The device address of each 4 KiB unit (NKV_KMOD_PAGE_SIZE, the
 * controller page the library sets in CC.MPS), into @iova: the kernel's
 * PAGE_SIZE may be larger (arm64 and ppc64 kernels with 16 or 64 KiB
 * pages), so @m's npages kernel pages give npages << (PAGE_SHIFT - 12)
 * entries, taken from the DMA side of the scatterlist only.
 */
static_assert(PAGE_SHIFT >= NKV_KMOD_PAGE_SHIFT);
static int nkv_map_export(struct nkv_map *m, u64 *iova, u32 *flags)
{
	unsigned long units = m->npages << (PAGE_SHIFT - NKV_KMOD_PAGE_SHIFT);
	struct scatterlist *sg;
	unsigned long n = 0;
	bool contig = true;
	int i;

	for_each_sgtable_dma_sg(&m->sgt, sg, i) {
		dma_addr_t a = sg_dma_address(sg);
		unsigned int off;

		for (off = 0; off < sg_dma_len(sg); off += NKV_KMOD_PAGE_SIZE) {
			if (n >= units)
				return -EFAULT;
			iova[n] = a + off;
			if (n && iova[n] != iova[0] + ((u64)n << NKV_KMOD_PAGE_SHIFT))
				contig = false;
			n++;
		}
	}
	if (n != units)
		return -EFAULT;
	*flags = contig ? NKV_KMOD_MAP_CONTIGUOUS : 0;
	return 0;
}

/* Build and pin one range, no lock held; on error nothing is left behind. */
static struct nkv_map *nkv_map_pin(const struct nkv_kmod_map *req)
{
	struct nkv_map *m;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	INIT_LIST_HEAD(&m->retired);
	m->npages = req->len >> PAGE_SHIFT;
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
	return m;

unpin:
	unpin_user_pages(m->pages, m->npages);
free_pages:
	kvfree(m->pages);
free_map:
	kfree(m);
	return ERR_PTR(ret);
}

/* Undo nkv_map_pin() of a range the device never saw. */
static void nkv_map_unpin(struct nkv_map *m)
{
	sg_free_table(&m->sgt);
	unpin_user_pages(m->pages, m->npages);
	kvfree(m->pages);
	kfree(m);
}

/* Reserve @bytes of the file's pin budget and the process's locked_vm. */
static int nkv_pin_budget(struct nkv_file *nf, u64 bytes)
{
	u64 limit = (u64)READ_ONCE(max_pinned_mb) << 20;
	int ret;

	mutex_lock(&nf->lock);
	/* remove and reset set these before they take nf->lock to release. */
	ret = READ_ONCE(nf->nd->gone) ? -ENODEV : -EIO;
	if (READ_ONCE(nf->nd->gone) || READ_ONCE(nf->nd->broken))
		goto out;
	ret = -E2BIG;
	if (bytes > limit || nf->pinned > limit - bytes)
		goto out;
	ret = account_locked_vm(nf->mm, bytes >> PAGE_SHIFT, true);
	if (!ret)
		nf->pinned += bytes;
out:
	mutex_unlock(&nf->lock);
	return ret;
}

static void nkv_pin_unbudget(struct nkv_file *nf, u64 bytes)
{
	mutex_lock(&nf->lock);
	nf->pinned -= bytes;
	mutex_unlock(&nf->lock);
	nkv_unaccount(nf->mm, bytes >> PAGE_SHIFT);
}

/* Move a live handle to the retired list; false if it is unknown. */
static bool nkv_retire(struct nkv_file *nf, u32 handle)
{
	struct nkv_map *m;

	mutex_lock(&nf->lock);
	m = xa_erase(&nf->maps, handle);
	if (m)
		list_add(&m->retired, &nf->retired);
	mutex_unlock(&nf->lock);
	return m;
}

/*
 * DMA-map @m and give it a handle, under the device lock (read) so remove
 * cannot run in between; nothing here waits on user memory. Once
 * DMA-mapped, a range is only ever retired, never unpinned, before the
 * controller is quiesced. Returns 0 (@m published), -EAGAIN after remove
 * or reset released the file's budget (@m still the caller's, unmapped), a
 * negative error with @m the caller's and unmapped, or -EIO with @m
 * retired (charged until quiesce).
 */
static int nkv_map_publish(struct nkv_file *nf, struct nkv_map *m, u64 *iova, u32 *flags,
			   u32 *handle)
{
	struct nkv_dev *nd = nf->nd;
	int ret;

	down_read(&nd->lock);
	if (nd->gone || nd->broken) {
		up_read(&nd->lock);
		return -EAGAIN;
	}
	ret = dma_map_sgtable(&nd->pdev->dev, &m->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret) {
		up_read(&nd->lock);
		return ret;
	}
	mutex_lock(&nf->lock);
	ret = nkv_map_export(m, iova, flags);
	if (!ret)
		ret = xa_alloc(&nf->maps, handle, m, xa_limit_31b, GFP_KERNEL);
	if (ret) {
		list_add(&m->retired, &nf->retired);
		ret = -EIO;
	}
	mutex_unlock(&nf->lock);
	up_read(&nd->lock);
	return ret;
}

static long nkv_ioc_map(struct nkv_file *nf, void __user *uarg)
{
	struct nkv_kmod_map req;
	struct nkv_map *m;
	u32 handle, flags = 0;
	u64 *iova;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	ret = nkv_map_check(&req);
	if (ret)
		return ret;
	if (current->mm != nf->mm)
		return -EPERM;	/* pins are charged to the opener */

	ret = nkv_pin_budget(nf, req.len);
	if (ret)
		return ret;
	iova = kvmalloc_array(req.npages, sizeof(*iova), GFP_KERNEL);
	m = iova ? nkv_map_pin(&req) : ERR_PTR(-ENOMEM);	/* may sleep: no lock held */
	if (IS_ERR(m)) {
		ret = PTR_ERR(m);
		goto unbudget;
	}
	ret = nkv_map_publish(nf, m, iova, &flags, &handle);
	if (ret == -EAGAIN) {
		/* Unbound or reset meanwhile: the budget went with the file's maps. */
		nkv_map_unpin(m);
		ret = nf->nd->gone ? -ENODEV : -EIO;
		goto out;
	}
	if (ret == -EIO)
		goto out;
	if (ret) {
		nkv_map_unpin(m);
		goto unbudget;
	}
	/* No lock held across the user copies. */
	req.handle = handle;
	req.flags = flags;
	if (copy_to_user(u64_to_user_ptr(req.iova_ptr), iova, req.npages * sizeof(*iova)) ||
	    copy_to_user(uarg, &req, sizeof(req))) {
		nkv_retire(nf, handle);
		ret = -EFAULT;
	}
out:
	kvfree(iova);
	return ret;

unbudget:
	kvfree(iova);
	nkv_pin_unbudget(nf, req.len);
	return ret;
}

static long nkv_ioc_unmap(struct nkv_file *nf, void __user *uarg)
{
	struct nkv_kmod_unmap req;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (!req.handle || req.handle > U32_MAX)
		return -EINVAL;
	if (current->mm != nf->mm)
		return -EPERM;	/* a forked child does not own the handles */
	/* Pages stay pinned and mapped until the controller is quiesced. */
	return nkv_retire(nf, req.handle) ? 0 : -EINVAL;
}

/*
 * The exporter is about to move or revoke a buffer the controller may be
 * using. The import pinned it, so only a revoke (device reset, driver
 * unbind on the exporter's side) gets here. Called with the buffer's
 * reservation lock held, so no nkv lock may be taken: turning bus
 * mastering off stops the controller's DMA at once, before the memory
 * goes; the owner's calls then return EIO and close disables the
 * controller as usual.
 */
static void nkv_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	struct nkv_map *m = attach->importer_priv;
	struct nkv_dev *nd = m->nd;

	/* Unbound: remove stopped the device, which may have a new driver. */
	if (READ_ONCE(nd->gone))
		return;
	WRITE_ONCE(nd->broken, true);
	pci_clear_master(nd->pdev);
	dev_warn(&nd->pdev->dev, "dma-buf of %s moves away: DMA stopped, owner gets EIO\n",
		 m->dmabuf->exp_name);
}

static const struct dma_buf_attach_ops nkv_importer_ops = {
	.allow_peer2peer = true,
	.move_notify = nkv_dmabuf_move_notify,
};

static int nkv_dmabuf_check(const struct nkv_kmod_dmabuf *req)
{
	if (req->flags || !req->len || !req->iova_ptr)
		return -EINVAL;
	if (!IS_ALIGNED(req->offset | req->len, NKV_KMOD_PAGE_SIZE))
		return -EINVAL;
	if (req->npages != req->len >> NKV_KMOD_PAGE_SHIFT)
		return -EINVAL;
	if (req->offset + req->len < req->offset)
		return -EINVAL;
	return 0;
}

/*
 * Attach to the dma-buf behind @req->fd with peer-to-peer allowed, pin it
 * (so it cannot move under the controller) and map it, with the
 * reservation lock held as dynamic importers must on every kernel (6.1
 * asserts it for dynamic attachments, 6.2 on for every map). No nkv lock
 * is held here.
 */
static struct nkv_map *nkv_dmabuf_attach(struct nkv_dev *nd, const struct nkv_kmod_dmabuf *req)
{
	struct device *dev = &nd->pdev->dev;
	struct sg_table *sgt;
	struct nkv_map *m;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	INIT_LIST_HEAD(&m->retired);
	m->nd = nd;
	m->dmabuf = dma_buf_get((int)req->fd);
	if (IS_ERR(m->dmabuf)) {
		ret = PTR_ERR(m->dmabuf);	/* EBADF, or EINVAL: not a dma-buf */
		goto free;
	}
	ret = -EINVAL;
	if (req->offset + req->len > m->dmabuf->size)
		goto put;
	m->attach = dma_buf_dynamic_attach(m->dmabuf, dev, &nkv_importer_ops, m);
	if (IS_ERR(m->attach)) {
		ret = PTR_ERR(m->attach);
		dev_warn_ratelimited(dev, "dma-buf of %s: exporter refused a peer-to-peer attachment (%d)\n",
				     m->dmabuf->exp_name, ret);
		goto put;
	}
	dma_resv_lock(m->dmabuf->resv, NULL);
	ret = dma_buf_pin(m->attach);
	if (!ret) {
		sgt = dma_buf_map_attachment(m->attach, DMA_BIDIRECTIONAL);
		if (IS_ERR(sgt)) {
			ret = PTR_ERR(sgt);
			dma_buf_unpin(m->attach);
		} else {
			m->dsgt = sgt;
		}
	}
	dma_resv_unlock(m->dmabuf->resv);
	if (ret) {
		dev_warn_ratelimited(dev, "dma-buf of %s: pin or map failed (%d)\n",
				     m->dmabuf->exp_name, ret);
		goto detach;
	}
	return m;

detach:
	dma_buf_detach(m->dmabuf, m->attach);
put:
	dma_buf_put(m->dmabuf);
free:
	kfree(m);
	return ERR_PTR(ret);
}

/*
 * Device memory only: an entry backed by a struct page that is not a PCI
 * P2PDMA page is system RAM, which an exporter may hand back silently
 * (a GPU driver migrating VRAM to system memory when peer-to-peer is not
 * possible). Without CONFIG_PCI_P2PDMA every page-backed entry is RAM.
 */
static bool nkv_sgt_has_ram(struct sg_table *sgt)
{
	struct scatterlist *sg;
	int i;

	for_each_sgtable_sg(sgt, sg, i) {
		struct page *pg = sg_page(sg);

		if (pg && !is_pci_p2pdma_page(pg))
			return true;
	}
	return false;
}

/*
 * The device address of each 4 KiB unit of [offset, offset + len), from
 * the DMA side of the scatterlist only (an exporter of device memory
 * fills no CPU side). Segments must be whole 4 KiB units.
 */
static int nkv_dmabuf_export(struct sg_table *sgt, u64 offset, u64 len, u64 *iova, u32 *flags)
{
	unsigned long units = len >> NKV_KMOD_PAGE_SHIFT, n = 0;
	struct scatterlist *sg;
	bool contig = true;
	u64 skip = offset;
	int i;

	for_each_sgtable_dma_sg(sgt, sg, i) {
		dma_addr_t a = sg_dma_address(sg);
		u64 l = sg_dma_len(sg), off;

		if (!IS_ALIGNED(a | l, NKV_KMOD_PAGE_SIZE))
			return -EOPNOTSUPP;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		for (off = skip; off < l && n < units; off += NKV_KMOD_PAGE_SIZE) {
			iova[n] = a + off;
			if (n && iova[n] != iova[0] + ((u64)n << NKV_KMOD_PAGE_SHIFT))
				contig = false;
			n++;
		}
		skip = 0;
		if (n == units)
			break;
	}
	if (n != units)
		return -EINVAL;	/* the mapping is shorter than the buffer */
	*flags = NKV_KMOD_MAP_P2P | (contig ? NKV_KMOD_MAP_CONTIGUOUS : 0);
	return 0;
}

/* Count one more import against NKV_KMOD_MAX_IMPORTS. */
static int nkv_import_budget(struct nkv_file *nf)
{
	int ret;

	mutex_lock(&nf->lock);
	ret = READ_ONCE(nf->nd->gone) ? -ENODEV : -EIO;
	if (!READ_ONCE(nf->nd->gone) && !READ_ONCE(nf->nd->broken))
		ret = nf->imports < NKV_KMOD_MAX_IMPORTS ? 0 : -E2BIG;
	if (!ret)
		nf->imports++;
	mutex_unlock(&nf->lock);
	return ret;
}

static void nkv_import_unbudget(struct nkv_file *nf)
{
	mutex_lock(&nf->lock);
	nf->imports--;
	mutex_unlock(&nf->lock);
}

/*
 * Give @m a handle under the device lock (read), so remove or reset
 * cannot run in between. -EAGAIN after remove or reset released the
 * file's imports (@m and its count are the caller's to drop).
 */
static int nkv_dmabuf_publish(struct nkv_file *nf, struct nkv_map *m, u32 *handle)
{
	struct nkv_dev *nd = nf->nd;
	int ret;

	down_read(&nd->lock);
	if (nd->gone || nd->broken) {
		up_read(&nd->lock);
		return -EAGAIN;
	}
	mutex_lock(&nf->lock);
	ret = xa_alloc(&nf->maps, handle, m, xa_limit_31b, GFP_KERNEL);
	mutex_unlock(&nf->lock);
	up_read(&nd->lock);
	return ret;
}

/* Refuse what is not device memory; fill @iova and @flags from @m. */
static int nkv_dmabuf_usable(struct nkv_map *m, const struct nkv_kmod_dmabuf *req, u64 *iova,
			     u32 *flags)
{
	struct device *dev = &m->nd->pdev->dev;
	int ret;

	/*
	 * CONFIG_DMABUF_DEBUG scrambles the page side of every exporter's
	 * table to catch importers that read it: its pages can be neither
	 * trusted nor dereferenced, so RAM cannot be told from device memory.
	 */
	if (IS_ENABLED(CONFIG_DMABUF_DEBUG)) {
		dev_warn_ratelimited(dev, "dma-buf of %s refused: CONFIG_DMABUF_DEBUG hides whether it is system memory\n",
				     m->dmabuf->exp_name);
		return -EOPNOTSUPP;
	}
	if (nkv_sgt_has_ram(m->dsgt)) {
		dev_warn_ratelimited(dev, "dma-buf of %s refused: it is system memory, not device memory reached peer-to-peer\n",
				     m->dmabuf->exp_name);
		return -EOPNOTSUPP;
	}
	ret = nkv_dmabuf_export(m->dsgt, req->offset, req->len, iova, flags);
	if (ret == -EOPNOTSUPP)
		dev_warn_ratelimited(dev, "dma-buf of %s refused: DMA segments not in 4 KiB units\n",
				     m->dmabuf->exp_name);
	return ret;
}

/*
 * NKV_IOC_DMABUF_IMPORT: a dma-buf of device memory for peer-to-peer DMA.
 * Like NKV_IOC_MAP, an import is only ever retired, never detached,
 * before the controller is quiesced, once the caller has its addresses.
 */
static long nkv_ioc_dmabuf_import(struct nkv_file *nf, void __user *uarg)
{
	struct nkv_dev *nd = nf->nd;
	struct nkv_kmod_dmabuf req;
	struct nkv_map *m;
	u32 handle, flags = 0;
	u64 *iova;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	ret = nkv_dmabuf_check(&req);
	if (ret)
		return ret;
	if (current->mm != nf->mm)
		return -EPERM;
	ret = nkv_import_budget(nf);
	if (ret)
		return ret;
	iova = kvmalloc_array(req.npages, sizeof(*iova), GFP_KERNEL);
	m = iova ? nkv_dmabuf_attach(nd, &req) : ERR_PTR(-ENOMEM);
	if (IS_ERR(m)) {
		ret = PTR_ERR(m);
		goto unbudget;
	}
	ret = nkv_dmabuf_usable(m, &req, iova, &flags);
	if (!ret)
		ret = nkv_dmabuf_publish(nf, m, &handle);
	if (ret) {
		nkv_dmabuf_release(m);	/* the controller never saw it */
		if (ret != -EAGAIN)
			goto unbudget;
		ret = nd->gone ? -ENODEV : -EIO;	/* the count went with the file's maps */
		goto out;
	}
	dev_dbg(&nd->pdev->dev, "imported %llu bytes of a dma-buf of %s, peer-to-peer%s\n",
		req.len, m->dmabuf->exp_name, flags & NKV_KMOD_MAP_CONTIGUOUS ? ", contiguous" : "");
	req.handle = handle;
	req.flags = flags;
	strscpy_pad(req.exporter, m->dmabuf->exp_name ? m->dmabuf->exp_name : "",
		    sizeof(req.exporter));
	if (copy_to_user(u64_to_user_ptr(req.iova_ptr), iova, req.npages * sizeof(*iova)) ||
	    copy_to_user(uarg, &req, sizeof(req))) {
		nkv_retire(nf, handle);
		ret = -EFAULT;
	}
out:
	kvfree(iova);
	return ret;

unbudget:
	kvfree(iova);
	nkv_import_unbudget(nf);
	return ret;
}

static long nkv_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct nkv_file *nf = file->private_data;
	void __user *uarg = (void __user *)arg;

	/* No device lock here: MAP pins and copies with none held. */
	if (READ_ONCE(nf->nd->gone))
		return -ENODEV;
	if (READ_ONCE(nf->nd->broken))
		return -EIO;
	switch (cmd) {
	case NKV_IOC_INFO:
		return nkv_ioc_info(nf, uarg);
	case NKV_IOC_MAP:
		return nkv_ioc_map(nf, uarg);
	case NKV_IOC_UNMAP:
		return nkv_ioc_unmap(nf, uarg);
	case NKV_IOC_DMABUF_IMPORT:
		return nkv_ioc_dmabuf_import(nf, uarg);
	default:
		return -ENOTTY;
	}
}

/*
 * BAR pages are inserted on first touch, under bar_lock, so a mapping can
 * never reach the BAR after remove() has zapped it: later touches get
 * SIGBUS. The vma holds the file, which holds nd.
 */
static bool nkv_msix_page(struct nkv_dev *nd, unsigned long pgoff)
{
	int i;

	for (i = 0; i < 2; i++)
		if (pgoff >= nd->msix_pg[i][0] && pgoff < nd->msix_pg[i][1])
			return true;
	return false;
}

static vm_fault_t nkv_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct nkv_dev *nd = vma->vm_private_data;
	unsigned long pfn;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	/* The MSI-X table and PBA belong to the kernel, as under vfio. */
	if (nkv_msix_page(nd, vmf->pgoff))
		return VM_FAULT_SIGBUS;
	down_read(&nd->bar_lock);
	if (!nd->gone && !nd->broken) {
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
	/* VM_DONTCOPY: a forked child gets no registers of its parent's device. */
	nkv_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY);
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

/* Record which BAR0 pages hold the MSI-X table and PBA. */
static void nkv_find_msix(struct nkv_dev *nd)
{
	struct pci_dev *pdev = nd->pdev;
	static const int reg[2] = { PCI_MSIX_TABLE, PCI_MSIX_PBA };
	u16 ctrl;
	u32 v, n, len;
	int i;

	if (!pdev->msix_cap)
		return;
	pci_read_config_word(pdev, pdev->msix_cap + PCI_MSIX_FLAGS, &ctrl);
	n = (ctrl & PCI_MSIX_FLAGS_QSIZE) + 1;
	for (i = 0; i < 2; i++) {
		pci_read_config_dword(pdev, pdev->msix_cap + reg[i], &v);
		if ((v & PCI_MSIX_TABLE_BIR) != 0)
			continue;
		v &= PCI_MSIX_TABLE_OFFSET;
		len = i ? DIV_ROUND_UP(n, 64) * 8 : n * PCI_MSIX_ENTRY_SIZE;
		nd->msix_pg[i][0] = v >> PAGE_SHIFT;
		nd->msix_pg[i][1] = PAGE_ALIGN(v + len) >> PAGE_SHIFT;
	}
}

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
	nkv_find_msix(nd);
	/* A shorter mask would bounce: refused at open (nkv_dma_unfit). */
	if (dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64)))
		dev_warn(&pdev->dev, "no 64-bit DMA mask\n");
	return 0;
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
	pci_intx(pdev, 0);	/* no INTx handler: keep a shared line quiet */

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

/*
 * Take the controller from its owner without unbinding: quiesce (unless
 * the device is unreachable), zap the BAR mappings, release every pinned
 * range. The owner's file then answers -EIO until it is closed; the next
 * owner starts afresh.
 */
static void nkv_take_away(struct nkv_dev *nd, bool reachable, const char *why)
{
	struct nkv_file *nf;

	down_write(&nd->lock);
	down_write(&nd->bar_lock);
	nf = nd->file;
	if (nf && !nd->gone && !nd->broken) {
		WRITE_ONCE(nd->broken, true);
		if (reachable)
			nkv_quiesce(nd);
		else
			pci_clear_master(nd->pdev);
		unmap_mapping_range(nf->mapping, 0, 0, 1);
	}
	up_write(&nd->bar_lock);
	if (nf && nd->broken) {
		nkv_file_release_maps(nf);
		dev_warn(&nd->pdev->dev, "%s: controller taken from its owner\n", why);
	}
	up_write(&nd->lock);
}

static void nkv_reset_prepare(struct pci_dev *pdev)
{
	nkv_take_away(pci_get_drvdata(pdev), true, "reset");
}

static void nkv_reset_done(struct pci_dev *pdev)
{
	pci_intx(pdev, 0);	/* the reset restored the command register */
}

static pci_ers_result_t nkv_error_detected(struct pci_dev *pdev, pci_channel_state_t state)
{
	nkv_take_away(pci_get_drvdata(pdev), state == pci_channel_io_normal, "PCI error");
	/* Recovery would need a new owner anyway: let the core unbind us. */
	return PCI_ERS_RESULT_DISCONNECT;
}

static const struct pci_error_handlers nkv_err_handler = {
	.error_detected = nkv_error_detected,
	.reset_prepare = nkv_reset_prepare,
	.reset_done = nkv_reset_done,
};

/* Reboot or kexec: no DMA into memory the next kernel will own. */
static void nkv_shutdown(struct pci_dev *pdev)
{
	struct nkv_dev *nd = pci_get_drvdata(pdev);

	if (!down_write_trylock(&nd->lock)) {
		/* Someone holds it briefly or is tearing down: stop DMA anyway. */
		nkv_quiesce(nd);
		return;
	}
	if (!nd->gone)
		nkv_quiesce(nd);
	up_write(&nd->lock);
}

static struct pci_driver nkv_driver = {
	.name = KBUILD_MODNAME,
	.id_table = NULL,	/* bind only through driver_override */
	.probe = nkv_probe,
	.remove = nkv_remove,
	.shutdown = nkv_shutdown,
	.err_handler = &nkv_err_handler,
};

module_pci_driver(nkv_driver);

MODULE_DESCRIPTION("nkv: a PCIe NVMe controller owned by one user-space process");
MODULE_VERSION(NKV_KMOD_VERSION);
MODULE_AUTHOR("nkv project");
MODULE_LICENSE("Dual MIT/GPL");
