/* SPDX-License-Identifier: MIT */
/*
 * ctx_switch.c - register-only fiber switch (see ctx_switch.h).
 *
 * Each saved context is a frame on the fiber's own stack holding the
 * callee-saved registers of the platform ABI and the return address;
 * the stack pointer is all a fiber keeps elsewhere.
 */
#include <stdint.h>

#include "device/cpu/ctx_switch.h"

#if defined(__x86_64__)
/* SysV: rbx, rbp, r12-r15 are callee-saved; the return address is on the
 * stack. The x87/SSE control words are never changed by lanes. */
__asm__(".text\n"
	".globl nkv_ctx_switch\n"
	".type nkv_ctx_switch,@function\n"
	"nkv_ctx_switch:\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	".size nkv_ctx_switch, .-nkv_ctx_switch\n");

void *nkv_ctx_make(void *top, void (*entry)(void))
{
	uint64_t *sp = (uint64_t *)((uintptr_t)top & ~(uintptr_t)15);
	int i;

	/* entry() starts as if called: its return address slot (never used)
	 * leaves rsp 8 bytes below a 16-byte boundary, as the ABI wants. */
	*--sp = 0;
	*--sp = (uint64_t)(uintptr_t)entry;
	for (i = 0; i < 6; i++)
		*--sp = 0;	/* rbp, rbx, r12-r15 */
	return sp;
}
#elif defined(__aarch64__)
/* AAPCS64: x19-x28, fp (x29), lr (x30) and d8-d15 are callee-saved. */
__asm__(".text\n"
	".globl nkv_ctx_switch\n"
	".type nkv_ctx_switch,%function\n"
	"nkv_ctx_switch:\n"
	"	sub sp, sp, #160\n"
	"	stp x19, x20, [sp, #0]\n"
	"	stp x21, x22, [sp, #16]\n"
	"	stp x23, x24, [sp, #32]\n"
	"	stp x25, x26, [sp, #48]\n"
	"	stp x27, x28, [sp, #64]\n"
	"	stp x29, x30, [sp, #80]\n"
	"	stp d8, d9, [sp, #96]\n"
	"	stp d10, d11, [sp, #112]\n"
	"	stp d12, d13, [sp, #128]\n"
	"	stp d14, d15, [sp, #144]\n"
	"	mov x2, sp\n"
	"	str x2, [x0]\n"
	"	mov sp, x1\n"
	"	ldp x19, x20, [sp, #0]\n"
	"	ldp x21, x22, [sp, #16]\n"
	"	ldp x23, x24, [sp, #32]\n"
	"	ldp x25, x26, [sp, #48]\n"
	"	ldp x27, x28, [sp, #64]\n"
	"	ldp x29, x30, [sp, #80]\n"
	"	ldp d8, d9, [sp, #96]\n"
	"	ldp d10, d11, [sp, #112]\n"
	"	ldp d12, d13, [sp, #128]\n"
	"	ldp d14, d15, [sp, #144]\n"
	"	add sp, sp, #160\n"
	"	ret\n"
	".size nkv_ctx_switch, .-nkv_ctx_switch\n");

void *nkv_ctx_make(void *top, void (*entry)(void))
{
	uint64_t *sp = (uint64_t *)((uintptr_t)top & ~(uintptr_t)15) - 20;
	int i;

	for (i = 0; i < 20; i++)
		sp[i] = 0;
	sp[11] = (uint64_t)(uintptr_t)entry;	/* x30: where ret goes */
	return sp;
}
#endif
