/* SPDX-License-Identifier: MIT */
/*
 * pidlock.h - a lock file that names its holder: one process at a time
 * holds it (flock), and it records that process's PID, so that a second
 * one refused can say who holds it. nkv-target takes one per socket path
 * (PATH.lock, vfio-user/listen.c); the rocksdb backend asks who holds
 * RocksDB's own LOCK file (an fcntl lock) the same way.
 *
 * The holder removes the file while still holding it (release); a taker
 * that locked a file removed meanwhile sees that its path now names
 * another file (or none) and takes again, so two takers never both hold
 * the lock on two files of one path.
 *
 * Thread safety: any thread; one holder per lock file per process.
 */
#ifndef NKV_TGT_PIDLOCK_H
#define NKV_TGT_PIDLOCK_H

#include <sys/types.h>

/*
 * Take the lock at path without waiting: create the file (mode 0644, less
 * the umask) when missing, flock it, write our PID. Returns the lock's fd
 * (>= 0); -EWOULDBLOCK when another process holds it (*holder: its PID,
 * 0 when neither /proc/locks nor the file tells); or another negative
 * errno (the file cannot be created or opened). *stale: the PID a holder
 * that never released (killed, crashed) left in the file, else 0.
 */
int nkv_pidlock_take(const char *path, pid_t *holder, pid_t *stale);

/* Remove path's file and drop the lock (fd from nkv_pidlock_take). */
void nkv_pidlock_release(const char *path, int fd);

/*
 * The PID of a process holding any lock (flock, fcntl, on any range) on
 * the file at path, from /proc/locks; else the live PID the file records
 * (nkv_pidlock_take's); else 0.
 */
pid_t nkv_lock_holder(const char *path);

/* The holder's program name (/proc/PID/comm) into buf; "?" if gone. */
void nkv_lock_holder_name(pid_t pid, char *buf, size_t len);

#endif /* NKV_TGT_PIDLOCK_H */
