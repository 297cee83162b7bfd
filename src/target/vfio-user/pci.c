/* SPDX-License-Identifier: MIT */
/*
 * pci.c - the PCI configuration space of a connection's NVMe function:
 * the header, its view with BAR0's size mask, the writable Command
 * register and BAR0, and what Interrupt Disable means here.
 */
#include <string.h>

#include "target/vfio-user/vfu.h"

static void nkv_vfu_put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void nkv_vfu_put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* A type-0 header for an NVMe controller with one 64-bit memory BAR and a
 * PCI Express endpoint capability (what drivers look for first). */
void nkv_vfu_cfg_init(struct nkv_vfu_conn *c)
{
	uint8_t *p = c->cfg;

	memset(p, 0, sizeof(c->cfg));
	nkv_vfu_put16(p + NKV_PCI_VENDOR_ID, NKV_VFU_PCI_VENDOR);
	nkv_vfu_put16(p + NKV_PCI_DEVICE_ID, NKV_VFU_PCI_DEVICE);
	nkv_vfu_put16(p + NKV_PCI_STATUS, NKV_PCI_STATUS_CAP_LIST);
	p[NKV_PCI_CLASS] = NKV_PCI_CLASS_NVME & 0xff;
	p[NKV_PCI_CLASS + 1] = (NKV_PCI_CLASS_NVME >> 8) & 0xff;
	p[NKV_PCI_CLASS + 2] = (NKV_PCI_CLASS_NVME >> 16) & 0xff;
	nkv_vfu_put16(p + NKV_PCI_SUBSYS_VENDOR, NKV_VFU_PCI_VENDOR);
	nkv_vfu_put16(p + NKV_PCI_SUBSYS_ID, NKV_VFU_PCI_DEVICE);
	p[NKV_PCI_CAP_PTR] = NKV_VFU_PCIE_CAP;
	p[NKV_PCI_INTERRUPT_PIN] = 1;		/* INTA#: see nkv_vfu_check_intx */
	p[NKV_VFU_PCIE_CAP] = 0x10;		/* cap id: PCI Express */
	p[NKV_VFU_PCIE_CAP + 1] = 0;		/* last capability */
	nkv_vfu_put16(p + NKV_VFU_PCIE_CAP + 2, 0x0002);	/* v2, endpoint */
	c->bar_lo = 0;
	c->bar_hi = 0;
}

/* The config space as read now: BAR0 shows its size mask like hardware
 * (64-bit, non-prefetchable memory: type bits 10b). */
void nkv_vfu_cfg_view(const struct nkv_vfu_conn *c, uint8_t *out)
{
	uint32_t lo = (c->bar_lo & ~(uint32_t)(c->bar0.size - 1)) | 0x4u;

	memcpy(out, c->cfg, NKV_PCI_CFG_SIZE);
	nkv_vfu_put32(out + NKV_PCI_BAR0, lo);
	nkv_vfu_put32(out + NKV_PCI_BAR0 + 4, c->bar_hi);
}

/*
 * The Command register bits a PCI Express endpoint with one memory BAR
 * implements (PCIe Base 7.5.1.1.3): Memory Space, Bus Master, Parity
 * Error Response, SERR# Enable, Interrupt Disable. I/O Space is 0 with
 * no I/O BAR; Special Cycles, MWI, VGA snoop, IDSEL and fast
 * back-to-back are hardwired 0 on PCI Express.
 */
#define NKV_VFU_CMD_RW (NKV_PCI_CMD_MEMORY | NKV_PCI_CMD_MASTER | NKV_PCI_CMD_PARITY | \
			NKV_PCI_CMD_SERR | NKV_PCI_CMD_INTX_DISABLE)

uint16_t nkv_vfu_command(const struct nkv_vfu_conn *c)
{
	uint16_t v;

	memcpy(&v, c->cfg + NKV_PCI_COMMAND, 2);
	return v;
}

/*
 * An enabled controller whose function has Interrupt Disable clear (and
 * no MSI/MSI-X: none is offered) signals completions with INTx. vfio-user
 * delivers interrupts only through an eventfd the client hands over with
 * SET_IRQS, and this server takes none: it cannot raise INTx, so it fails
 * the controller (CSTS.CFS) rather than leave a driver waiting for
 * interrupts that never come. Drivers that poll set Interrupt Disable.
 */
void nkv_vfu_check_intx(struct nkv_vfu_conn *c)
{
	if (!c->ctrl || nkv_tgt_ctrl_failed(c->ctrl) ||
	    (nkv_vfu_command(c) & NKV_PCI_CMD_INTX_DISABLE) ||
	    !(nkv_tgt_ctrl_reg_read(c->ctrl, NKV_REG_CSTS, 4) & NKV_CSTS_RDY))
		return;
	nkv_tgt_ctrl_fail(c->ctrl, "intx_needed_but_not_deliverable(set_Interrupt_Disable_in_the_PCI_Command_register)");
}

/* Writable: the command register and BAR0/BAR1; the rest is read-only. */
void nkv_vfu_cfg_write(struct nkv_vfu_conn *c, uint32_t off, const uint8_t *d,
		       uint32_t len)
{
	uint8_t view[NKV_PCI_CFG_SIZE];
	uint32_t i;

	nkv_vfu_cfg_view(c, view);
	for (i = 0; i < len; i++) {
		uint32_t o = off + i;

		if (o == NKV_PCI_COMMAND || o == NKV_PCI_COMMAND + 1)
			c->cfg[o] = d[i] & (uint8_t)(NKV_VFU_CMD_RW >> (8 * (o - NKV_PCI_COMMAND)));
		else if (o >= NKV_PCI_BAR0 && o < NKV_PCI_BAR0 + 8)
			view[o] = d[i];
	}
	memcpy(&c->bar_lo, view + NKV_PCI_BAR0, 4);
	memcpy(&c->bar_hi, view + NKV_PCI_BAR0 + 4, 4);
	if (c->ctrl)
		nkv_tgt_ctrl_set_bus_master(c->ctrl, nkv_vfu_command(c) & NKV_PCI_CMD_MASTER);
}
