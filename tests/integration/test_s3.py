"""S3 origin against s3rver, with a SigV4-checking proxy in between.

Run: /usr/bin/python3 -m pytest tests/integration/test_s3.py
Needs s3rver (scripts/install-deps) and python3-botocore.
"""
import errno
import json
import os
import random
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers.compare import compare_bytes, compare_tree, list_files, read_all  # noqa: E402
from helpers.dataset import random_bytes  # noqa: E402
from helpers.manifest import write_manifest  # noqa: E402
from helpers.mount import MountError  # noqa: E402
from s3_fixtures import (BUCKET, SECRET, ACCESS_KEY, s3_client,  # noqa: E402,F401
                         s3rver, sigv4_proxy, upload_tree)

N_MANY = 1200          # objects in many/: more than one 1000-key page
MAX_KEYS = 100         # PRESTOFS_S3_MAX_KEYS: forces ~15 listing pages
SESSION_TOKEN = "FQoGZXIvYXdzEPT//////////wEaDH+token/with=chars"
EMPTY_DIRS = ["empty-dir", "a/empty-sub"]


def _env(tmp_path, **extra):
    """The daemon's environment: no credentials from the host, only ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = str(tmp_path)  # no ~/.aws/credentials
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def s3_tree(s3rver, dataset, tmp_path_factory):
    """The source tree uploaded under PREFIX "ds/" (the shared dataset plus
    N_MANY small files), with directory markers for the empty dirs, a few
    keys outside the prefix and a few that cannot be file names."""
    src = tmp_path_factory.mktemp("s3src") / "tree"
    shutil.copytree(dataset, src)
    rng = random.Random(7)
    for i in range(N_MANY):
        p = src / "many" / f"d{i % 3}" / f"f{i:05d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(random_bytes(rng, rng.randrange(0, 300)))
    client = s3_client(s3rver.url)
    n = upload_tree(client, src, "ds/", dir_markers=EMPTY_DIRS)
    assert n == len(list_files(src))
    # Outside the prefix: must not show up.
    client.put_object(Bucket=BUCKET, Key="ds-other/x.bin", Body=b"nope")
    client.put_object(Bucket=BUCKET, Key="outside.bin", Body=b"nope")
    # Not representable as files: skipped with a warning each.
    client.put_object(Bucket=BUCKET, Key="ds/dirdata/", Body=b"xx")
    client.put_object(Bucket=BUCKET, Key="ds/ctl\x01char.bin", Body=b"x")
    return src


def _mount_s3(mount, endpoint, env, prefix="ds", **opts):
    options = {"endpoint": endpoint, "s3_path_style": True, "timeout": 5,
               "retries": 1}
    options.update(opts)
    return mount(f"s3://{BUCKET}/{prefix}", options, env=env)


def _assert_no_secret(m, *secrets):
    text = m.stderr_text(10**8)
    stats = json.dumps(m.stats()) if m.alive() else ""
    for s in secrets:
        assert s not in text, "secret leaked into the daemon's output"
        assert s not in stats, "secret leaked into .prestofs/stats"


def test_signed_listing_and_bytes(mount, sigv4_proxy, s3_tree, tmp_path):
    proxy = sigv4_proxy(session_token=SESSION_TOKEN)
    env = _env(tmp_path, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET,
               AWS_SESSION_TOKEN=SESSION_TOKEN, PRESTOFS_S3_MAX_KEYS=str(MAX_KEYS))
    m = _mount_s3(mount, proxy.url, env)
    mnt = m.path

    compare_tree(s3_tree, mnt, mtime=None)
    assert not (mnt / "prestofs.manifest").exists()
    assert not (mnt / "dirdata").exists()
    names = os.listdir(mnt)
    assert "x.bin" not in names and "outside.bin" not in names
    assert not any("char" in n for n in names)

    listed = [t for t in proxy.targets if "list-type=2" in t]
    assert len(listed) >= (N_MANY + 40) // MAX_KEYS, listed[:5]
    assert any("continuation-token=" in t for t in listed)
    # The listing starts flat; delimited pages only give range hints, at
    # most one per level looked into (HINT_LEVELS in origin/s3/s3.c).
    assert "delimiter=" not in listed[0]
    assert 1 <= sum("delimiter=%2F" in t for t in listed) <= 4
    # Listed in parallel key ranges: some pages start after a bound.
    assert any("start-after=" in t for t in listed)

    # Every byte of the named-weird dataset files, and random ranges of a
    # sample of the many small ones.
    compare_bytes(s3_tree, mnt, ranges_per_file=6)
    many = [f for f in list_files(s3_tree) if f.startswith("many/")]
    sample = random.Random(3).sample(many, 60)
    compare_bytes(s3_tree, mnt, ranges_per_file=3, files=sample)

    assert proxy.rejected == 0, proxy.reasons
    assert proxy.unsigned == 0
    assert proxy.accepted > len(listed)  # reads were signed too
    assert m.stats()["origin"]["requests"] > 0
    log = m.stderr_text(10**8)
    assert "dirdata/" in log and "ctl?char.bin" in log  # one warning each
    assert "skipped 2 keys" in log  # and nothing else (no range overlap)
    _assert_no_secret(m, SECRET, SESSION_TOKEN)


def test_credentials_file_profile(mount, sigv4_proxy, s3_tree, tmp_path):
    proxy = sigv4_proxy()
    creds = tmp_path / "creds"
    creds.write_text("[default]\naws_access_key_id = WRONGKEY\n"
                     "aws_secret_access_key = wrong\n\n"
                     f"[pfs]\naws_access_key_id = {ACCESS_KEY}\n"
                     f"aws_secret_access_key = {SECRET}\n")
    env = _env(tmp_path, AWS_SHARED_CREDENTIALS_FILE=str(creds), AWS_PROFILE="pfs")
    m = _mount_s3(mount, proxy.url, env, prefix="ds/a/")
    compare_tree(s3_tree / "a", m.path, mtime=None)
    compare_bytes(s3_tree / "a", m.path)
    assert proxy.rejected == 0, proxy.reasons
    assert proxy.accepted > 0
    _assert_no_secret(m, SECRET)


def test_aws_profile_options_win(mount, sigv4_proxy, s3_tree, tmp_path):
    """-o aws_profile and -o aws_credentials_file (fstab, systemd): they win
    over the AWS_* variables, whose keys here are wrong; requests are
    signed with the profile's secret (the proxy checks every signature)."""
    proxy = sigv4_proxy()
    creds = tmp_path / "etc-creds"
    creds.write_text(f"[train]\naws_access_key_id = {ACCESS_KEY}\n"
                     f"aws_secret_access_key = {SECRET}\n")
    wrong = "EnvS3cret/not+this=="
    env = _env(tmp_path, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=wrong,
               AWS_PROFILE="nope")
    m = _mount_s3(mount, proxy.url, env, prefix="ds/a/", aws_profile="train",
                  aws_credentials_file=str(creds))
    compare_bytes(s3_tree / "a", m.path)
    assert proxy.rejected == 0, proxy.reasons
    assert proxy.accepted > 0
    assert f"credentials from {creds} [train]" in m.stderr_text(10**6)
    _assert_no_secret(m, SECRET, wrong)


def test_aws_profile_from_config_file(mount, sigv4_proxy, s3_tree, tmp_path):
    """A profile of ~/.aws/config ("[profile NAME]", as the AWS CLI writes
    it) when the credentials file has none of that name; a profile found
    nowhere stops the mount with a message that names it and no secret."""
    proxy = sigv4_proxy()
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        "[other]\naws_access_key_id = X\naws_secret_access_key = y\n")
    (tmp_path / ".aws" / "config").write_text(
        "[default]\nregion = us-east-1\n"
        f"[profile cfg]\nregion = us-east-1\naws_access_key_id = {ACCESS_KEY}\n"
        f"aws_secret_access_key = {SECRET}\n")
    env = _env(tmp_path)
    m = _mount_s3(mount, proxy.url, env, prefix="ds/a/", aws_profile="cfg")
    compare_bytes(s3_tree / "a", m.path)
    assert proxy.rejected == 0 and proxy.accepted > 0, proxy.reasons
    assert "config [profile cfg]" in m.stderr_text(10**6)
    _assert_no_secret(m, SECRET)
    assert m.stop() == []
    with pytest.raises(MountError) as ei:
        _mount_s3(mount, proxy.url, env, prefix="ds/a/", aws_profile="absent")
    msg = str(ei.value)
    assert "profile [absent]" in msg and SECRET not in msg, msg


def test_wrong_secret_is_refused(mount, sigv4_proxy, s3_tree, tmp_path):
    proxy = sigv4_proxy()
    wrong = "WrongS3cretValue/abc+def=="
    env = _env(tmp_path, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=wrong)
    with pytest.raises(MountError) as ei:
        _mount_s3(mount, proxy.url, env)
    assert wrong not in str(ei.value)
    assert proxy.rejected > 0 and proxy.accepted == 0
    assert all("signature mismatch" in r for r in proxy.reasons), proxy.reasons


def test_reads_refused_after_listing(mount, sigv4_proxy, s3rver, s3_tree, tmp_path):
    """A manifest given locally skips listing; then every signed GET is
    refused (wrong secret): reads fail with EACCES, not garbage."""
    proxy = sigv4_proxy()
    manifest = tmp_path / "m.manifest"
    write_manifest(s3_tree / "a", dest=manifest)
    env = _env(tmp_path, AWS_ACCESS_KEY_ID=ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY="another/wrong+secret")
    m = _mount_s3(mount, proxy.url, env, prefix="ds/a", manifest=str(manifest))
    m.allow_errors(r".*")
    with pytest.raises(OSError) as ei:
        read_all(m.path / "top-of-a.txt")
    assert ei.value.errno == errno.EACCES
    assert proxy.rejected > 0 and proxy.accepted == 0


def test_manifest_object(mount, sigv4_proxy, s3rver, s3_tree, tmp_path):
    """PREFIX/prestofs.manifest, when present, is used instead of listing
    and is not shown as a file."""
    client = s3_client(s3rver.url)
    sub = s3_tree / "a"
    write_manifest(sub, dest=tmp_path / "mf")
    client.put_object(Bucket=BUCKET, Key="ds/a/prestofs.manifest",
                      Body=(tmp_path / "mf").read_bytes())
    try:
        proxy = sigv4_proxy()
        env = _env(tmp_path, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET)
        m = _mount_s3(mount, proxy.url, env, prefix="ds/a")
        compare_tree(sub, m.path, mtime="s")
        compare_bytes(sub, m.path)
        assert not (m.path / "prestofs.manifest").exists()
        assert not [t for t in proxy.targets if "list-type" in t], proxy.targets
        assert proxy.rejected == 0, proxy.reasons
    finally:
        client.delete_object(Bucket=BUCKET, Key="ds/a/prestofs.manifest")


def test_anonymous_unsigned(mount, sigv4_proxy, s3_tree, tmp_path):
    proxy = sigv4_proxy(allow_unsigned=True)
    m = _mount_s3(mount, proxy.url, _env(tmp_path), prefix="ds/weird/")
    compare_tree(s3_tree / "weird", m.path, mtime=None)
    compare_bytes(s3_tree / "weird", m.path)
    assert proxy.unsigned > 0 and proxy.accepted == 0 and proxy.rejected == 0
