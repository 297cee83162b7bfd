/* SPDX-License-Identifier: MIT */
/*
 * ctx_switch.h - the fiber switch of the cpu engine.
 *
 * swapcontext() saves and restores the signal mask with a system call on
 * every switch; a 64-lane wave switches all its lanes at every collective,
 * which made the syscall the engine's whole cost. Lanes never change their
 * signal mask, so on x86-64 and aarch64 a switch only saves the callee-
 * saved registers on the old stack and loads them from the new one
 * (ctx_switch.c). Other architectures keep ucontext.
 */
#ifndef NKV_DEVICE_CPU_CTX_SWITCH_H
#define NKV_DEVICE_CPU_CTX_SWITCH_H

#include <stddef.h>

#if defined(__x86_64__) || defined(__aarch64__)
#define NKV_CTX_ASM 1

/* Save the callee-saved registers on the current stack, store the stack
 * pointer in *save, continue on the stack load (made by a previous save
 * or by nkv_ctx_make). Returns when something switches back to *save. */
void nkv_ctx_switch(void **save, void *load);

/* A stack (top = highest address, 16-byte aligned) that enters entry()
 * on the first switch to the returned value. entry must never return. */
void *nkv_ctx_make(void *top, void (*entry)(void));
#endif

#endif /* NKV_DEVICE_CPU_CTX_SWITCH_H */
