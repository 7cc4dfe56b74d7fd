/* s3url.h - S3 origin strings and request URLs (pure string work).
 *
 * Addressing: path style is ENDPOINT/BUCKET/KEY; virtual-host style puts
 * the bucket in front of the endpoint's host: https://BUCKET.HOST/KEY.
 * Listing queries are built already sorted by parameter name and
 * percent-encoded as SigV4 canonicalises them, because curl 7.88 signs the
 * query exactly as given (curl issue 9717). Thread-safe, no globals.
 */
#ifndef PFS_S3URL_H
#define PFS_S3URL_H

#define PFS_S3URL_BUCKET_MAX 255

/* Splits "s3://BUCKET[/PREFIX]" into a new bucket string and a new key
 * prefix that is "" or ends in exactly one '/' ("s3://b/x/y" and
 * "s3://b/x/y/" both give "x/y/"). Repeated or trailing slashes are
 * folded away; the prefix must be a valid path (pfs_path_valid). Returns
 * 0, -EINVAL (message in err) or -ENOMEM. The caller frees both. */
int pfs_s3url_parse(const char *url, char **bucket, char **prefix,
		    char *err, size_t errcap);

/* The bucket's base URL without a trailing '/': "ENDPOINT/BUCKET" (path
 * style) or "SCHEME://BUCKET.HOST[:PORT][/PATH]". `endpoint` NULL means
 * https://s3.REGION.amazonaws.com. Virtual-host style needs a DNS-safe
 * bucket name (lowercase letters, digits, '-', '.'). Returns 0, -EINVAL
 * (message in err) or -ENOMEM; the caller frees *out. */
int pfs_s3url_base(const char *endpoint, const char *region,
		   const char *bucket, int path_style, char **out,
		   char *err, size_t errcap);

/* BASE/KEY with the key percent-encoded, '/' kept. NULL on ENOMEM;
 * the caller frees. */
char *pfs_s3url_object(const char *base, const char *key);

/* BASE?QUERY for ListObjectsV2: continuation-token (if token),
 * delimiter (if delim), encoding-type=url, list-type=2, max-keys (if
 * max_keys > 0), prefix (if non-empty), start-after (if start_after), in
 * that (sorted) order. NULL on ENOMEM; the caller frees. */
char *pfs_s3url_list(const char *base, const char *prefix, const char *delim,
		     const char *token, const char *start_after, int max_keys);

#endif
