/* Unit tests for cache/shared.h without a memcached: server lists, keys
 * (short, no path, every input counts), and a tier whose servers are
 * missing (refused): gets miss, puts are taken and dropped, locks are not
 * held, the server is left out after one failure, nothing blocks. The
 * tests against real servers are tests/integration/test_shared.py. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cache/shared.h"

static void test_server_lists(void **state)
{
	(void)state;
	char err[256];
	static const char *const good[] = {
		"memcached://10.0.0.5:11211", "10.0.0.5:11211+10.0.0.6:11211",
		"memcached://a:1+b:2+c:65535", "[::1]:11211", "a:1, b:2,c:3", "host.example:11211",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (pfs_shared_parse_servers(good[i], err, sizeof(err)))
			fail_msg("'%s' refused: %s", good[i], err);
	static const struct { const char *spec, *word; } bad[] = {
		{"", "no server"}, {"memcached://", "no server"}, {"+", "no server"},
		{"host", "HOST:PORT"}, {":11211", "HOST:PORT"}, {"h:0", "port"},
		{"h:65536", "port"}, {"h:x", "port"}, {"h:", "port"}, {"[::1", "[ADDRESS]:PORT"},
		{"[::1]11211", "[ADDRESS]:PORT"}, {"h:1+k", "HOST:PORT"},
		{"memcached://a:1+memcached://b:2", "prefix"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (pfs_shared_parse_servers(bad[i].spec, err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' accepted", bad[i].spec);
		if (!strstr(err, bad[i].word))
			fail_msg("'%s': '%s' lacks '%s'", bad[i].spec, err, bad[i].word);
	}
	/* Host names up to 255 bytes; longer ones are refused, not copied
	 * (a 290-byte one overflowed a 256-byte buffer). */
	char spec[400];
	for (size_t hl = 250; hl <= 298; hl++) {
		memset(spec, 'h', hl);
		snprintf(spec + hl, sizeof(spec) - hl, ":11211");
		int rc = pfs_shared_parse_servers(spec, err, sizeof(err));
		if (hl <= 255 ? rc != 0 : rc != -EINVAL || !strstr(err, "long"))
			fail_msg("host of %zu bytes: %d '%s'", hl, rc, err);
		spec[0] = '[';
		spec[hl - 1] = ']';
		rc = pfs_shared_parse_servers(spec, err, sizeof(err));
		if (hl - 2 <= 255 ? rc != 0 : rc != -EINVAL || !strstr(err, "long"))
			fail_msg("[host] of %zu bytes: %d '%s'", hl - 2, rc, err);
	}
}

static struct pfs_shared *open_tier(const char *servers, const char *origin, size_t bs)
{
	struct pfs_shared_opts o = { .servers = servers, .origin_id = origin, .block_size = bs,
				     .timeout = 0.05, .retry = 30, .lock_wait = 0.05 };
	struct pfs_shared *s = NULL;
	assert_int_equal(pfs_shared_create(&o, &s), 0);
	return s;
}

static void test_keys(void **state)
{
	(void)state;
	struct pfs_shared *s = open_tier("127.0.0.1:1", "http://data.example/imagenet/", 1 << 20);
	struct pfs_shared *s2 = open_tier("127.0.0.1:1", "http://other.example/", 1 << 20);
	struct pfs_shared *s3 = open_tier("127.0.0.1:1", "http://data.example/imagenet/", 1 << 19);
	char longpath[4000];
	memset(longpath, 'p', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = 0;
	struct pfs_shared_key k, o;
	pfs_shared_key(s, "train/n01/img1.JPEG", 1000, 42, 0, &k);
	assert_true(k.klen < 250 && k.klen == strlen(k.k));
	assert_non_null(strstr(k.k, "pfs1:"));
	assert_null(strstr(k.k, "train"));
	assert_null(strchr(k.k, ' '));
	/* Same inputs, same key; each input changes it. */
	pfs_shared_key(s, "train/n01/img1.JPEG", 1000, 42, 0, &o);
	assert_string_equal(k.k, o.k);
	assert_true(k.h[0] == o.h[0] && k.h[1] == o.h[1]);
	const struct { struct pfs_shared *t; const char *path; uint64_t size, fp, blk; } other[] = {
		{s, "train/n01/img2.JPEG", 1000, 42, 0}, {s, "train/n01/img1.JPEG", 1001, 42, 0},
		{s, "train/n01/img1.JPEG", 1000, 43, 0}, {s, "train/n01/img1.JPEG", 1000, 42, 1},
		{s2, "train/n01/img1.JPEG", 1000, 42, 0}, {s3, "train/n01/img1.JPEG", 1000, 42, 0},
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		pfs_shared_key(other[i].t, other[i].path, other[i].size, other[i].fp, other[i].blk,
			       &o);
		if (!strcmp(o.k, k.k) || (o.h[0] == k.h[0] && o.h[1] == k.h[1]))
			fail_msg("input %zu does not change the key", i);
	}
	pfs_shared_key(s, longpath, UINT64_MAX, UINT64_MAX, UINT64_MAX, &o);
	assert_true(o.klen < 250 && o.klen == strlen(o.k));
	pfs_shared_destroy(s);
	pfs_shared_destroy(s2);
	pfs_shared_destroy(s3);
}

static int released;
static void on_release(void *arg)
{
	(void)arg;
	released++;
}

/* Port 1 on localhost refuses: every call comes back at once, nothing
 * fails but the counters. */
static void test_no_server(void **state)
{
	(void)state;
	struct pfs_shared *s = open_tier("127.0.0.1:1+127.0.0.1:2", "file:///d", 4096);
	struct pfs_shared_key k;
	char buf[4096], v[PFS_SHARED_VALIDATOR_MAX];
	pfs_shared_key(s, "a", 4096, 1, 0, &k);
	/* No answer: -EIO (a caller takes no lock on it). */
	assert_int_equal(pfs_shared_get(s, &k, "", buf, sizeof(buf), v), -EIO);
	assert_int_equal(pfs_shared_lock(s, &k), -1);
	assert_int_equal(pfs_shared_wait(s, &k, NULL, buf, sizeof(buf), v), -EIO);
	/* Puts: no validator is refused (and released); else queued. */
	released = 0;
	assert_int_equal(pfs_shared_put(s, &k, "-", buf, sizeof(buf), 0, on_release, NULL),
			 -EINVAL);
	assert_int_equal(pfs_shared_put(s, &k, "", buf, sizeof(buf), 0, on_release, NULL),
			 -EINVAL);
	assert_int_equal(released, 2);
	memset(buf, 7, sizeof(buf));
	assert_int_equal(pfs_shared_put(s, &k, "\"e1\"", buf, sizeof(buf), 1, on_release, NULL),
			 0);
	assert_int_equal(pfs_shared_put(s, &k, "\"e1\"", buf, sizeof(buf), 0, NULL, NULL), 0);
	pfs_shared_flush(s);
	assert_int_equal(released, 3);
	struct pfs_shared_stats st;
	pfs_shared_stats(s, &st);
	assert_int_equal(st.hits, 0);
	assert_int_equal(st.stores, 0);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.servers, 2);
	assert_true(st.errors >= 1);
	assert_true(st.misses >= 2);
	/* Both refused once, then left out: later calls send nothing. */
	pfs_shared_key(s, "b", 4096, 1, 0, &k);
	assert_int_equal(pfs_shared_get(s, &k, "", buf, sizeof(buf), v), -EIO);
	pfs_shared_stats(s, &st);
	uint64_t errors = st.errors;
	for (int i = 0; i < 50; i++) {
		pfs_shared_key(s, "c", 4096, 1, (uint64_t)i, &k);
		assert_int_equal(pfs_shared_get(s, &k, "", buf, sizeof(buf), v), -EIO);
	}
	pfs_shared_stats(s, &st);
	assert_int_equal(st.errors, errors);
	assert_int_equal(st.servers_down, 2);
	assert_true(st.skipped >= 50);
	pfs_shared_destroy(s);
	pfs_shared_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_lists),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_no_server),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
