/* fuzz_config.c - tools/config.c: the configuration file (libinih behind
 * our own line reader) and every value through pfs_opts_set().
 *
 * The input is the file. It is loaded twice: with no key set by -o, and
 * with every other key "set by -o" (skip), so both the applying and the
 * checking-only paths run.
 *
 * Invariants: 0 or -EINVAL; an error names the file ("PATH:LINE: ..." or
 * "config file 'PATH': ..."); a loaded file leaves every option inside the
 * range the option table documents; what -o set is never overwritten.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "tools/config.h"
#include "tools/options.h"

static void check_opts(const struct pfs_opts *o)
{
	FUZZ_CHECK(o->timeout > 0 && isfinite(o->timeout));
	FUZZ_CHECK(o->retries <= 100);
	FUZZ_CHECK(o->block_size >= 4096 && o->block_size <= (64u << 20));
	FUZZ_CHECK(!o->ssd_dir || o->ssd_dir[0] == '/');
	FUZZ_CHECK(o->ssd_zstd_level >= 1 && o->ssd_zstd_level <= 19);
	FUZZ_CHECK(o->prefetch == 0 || o->prefetch == 1);
	FUZZ_CHECK(o->prefetch_inflight >= 1 && o->prefetch_inflight <= 4096);
	FUZZ_CHECK(o->prefetch_window >= 1 && o->prefetch_window <= UINT32_MAX);
	FUZZ_CHECK(o->prefetch_ram_share >= 0 && o->prefetch_ram_share <= 1);
	FUZZ_CHECK(o->view_max_pixels >= 1 && o->view_workers <= 1024);
	FUZZ_CHECK(o->max_threads >= 1 && o->max_threads <= 100000);
	FUZZ_CHECK(!o->endpoint || o->endpoint[0]);
	FUZZ_CHECK(!o->region || o->region[0]);
	FUZZ_CHECK(!o->manifest || o->manifest[0]);
}

static void load(const char *path, uint64_t skip)
{
	struct pfs_opts o, dflt;
	char err[1024], prefix[128];

	pfs_opts_init(&o);
	pfs_opts_init(&dflt);
	int rc = pfs_config_load(&o, path, skip, err, sizeof(err));
	if (rc) {
		FUZZ_CHECK(rc == -EINVAL);
		snprintf(prefix, sizeof(prefix), "%s:", path);
		FUZZ_CHECK(!strncmp(err, prefix, strlen(prefix)) ||
			   !strncmp(err, "config file '", 13));
	} else {
		check_opts(&o);
	}
	/* Keys set by -o keep their values; the defaults stand in for them. */
	if (skip) {
		for (size_t i = 0; i < pfs_opts_nkeys(); i++) {
			if (!((skip >> i) & 1))
				continue;
			const char *k = pfs_opts_key_name(i);
			if (!strcmp(k, "timeout"))
				FUZZ_CHECK(o.timeout == dflt.timeout);
			else if (!strcmp(k, "block_size"))
				FUZZ_CHECK(o.block_size == dflt.block_size);
			else if (!strcmp(k, "ram_size"))
				FUZZ_CHECK(o.ram_size == dflt.ram_size);
			else if (!strcmp(k, "ssd_dir"))
				FUZZ_CHECK(o.ssd_dir == NULL);
			else if (!strcmp(k, "endpoint"))
				FUZZ_CHECK(o.endpoint == NULL);
			else if (!strcmp(k, "prefetch_window"))
				FUZZ_CHECK(o.prefetch_window == dflt.prefetch_window);
		}
	}
	pfs_opts_finish(&o);
	pfs_opts_finish(&dflt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];

	fuzz_file(data, size, path, sizeof(path));
	load(path, 0);
	load(path, 0x5555555555555555ull);
	return 0;
}
