/* fuzz.h - shared by the fuzz targets tests/fuzz/fuzz_*.c.
 *
 * Each target defines LLVMFuzzerTestOneInput() and nothing else global.
 * It is linked two ways (tests/fuzz/meson.build):
 *   - with libFuzzer (-Dfuzz=true, clang, scripts/fuzz): coverage-guided;
 *   - with replay.c (every build with tests): the seed corpus and the
 *     regression inputs in tests/fuzz/regress/TARGET/ run once each as a
 *     unit test, under gcc, and under ASan + UBSan in the sanitizer pass.
 * A target checks invariants beyond "no crash" and calls abort() (a crash
 * to libFuzzer, a failed test to meson) when one breaks.
 */
#ifndef PFS_FUZZ_H
#define PFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reports a broken invariant and aborts. */
#define FUZZ_CHECK(cond)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, \
				__LINE__, #cond);                               \
			abort();                                                \
		}                                                               \
	} while (0)

/* For parsers that read a file by path: one memory file per process
 * holding data[0..size), named by *path ("/proc/self/fd/N", a regular
 * file). Aborts if the file cannot be made. */
static inline void fuzz_file(const uint8_t *data, size_t size, char *path, size_t cap)
{
	static int fd = -1;

	if (fd < 0 && (fd = memfd_create("fuzz-input", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(fd, 0) != 0 ||
	    (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	snprintf(path, cap, "/proc/self/fd/%d", fd);
}

#endif
