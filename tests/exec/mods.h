/* SPDX-License-Identifier: MIT */
/*
 * mods.h - Lua modules more than one Exec suite runs (docs/exec.md).
 */
#ifndef NKV_TEST_EXEC_MODS_H
#define NKV_TEST_EXEC_MODS_H

/* Whether a call saw one whole value under concurrent Stores: the first
 * byte again at every 4 KiB and at the end ("mixed" if not), then that
 * byte and the length ("a1048576"). */
#define EXEC_WHOLE_MOD                                                   \
	"return function(value)\n"                                       \
	"  local c, n = value:sub(1, 1), value:len()\n"                  \
	"  for i = 1, n, 4096 do\n"                                      \
	"    if value:sub(i, i) ~= c then return 'mixed' end\n"          \
	"  end\n"                                                        \
	"  if value:sub(n, n) ~= c then return 'mixed' end\n"            \
	"  return c .. n\n"                                              \
	"end\n"

#endif
