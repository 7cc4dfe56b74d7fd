"""A real training loader over the mount: torchvision ImageFolder +
DataLoader (2 worker processes) over an HTTP origin gives exactly what it
gives over the source directory."""
import pytest

from helpers.dataset import make_imagefolder
from helpers.manifest import write_manifest

torch = pytest.importorskip("torch")
tv = pytest.importorskip("torchvision")
from torchvision import datasets, transforms  # noqa: E402


def _load(root):
    tf = transforms.Compose([transforms.Resize((40, 40)), transforms.ToTensor()])
    ds = datasets.ImageFolder(str(root), transform=tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=False, num_workers=2)
    xs, ys = [], []
    for x, y in dl:
        xs.append(x)
        ys.append(y)
    return ds, torch.cat(xs), torch.cat(ys)


@pytest.mark.parametrize("listing", ["manifest", "autoindex"])
def test_imagefolder_over_http(tmp_path, nginx, mount, listing):
    src = tmp_path / "images"
    make_imagefolder(src, classes=3, per_class=5, width=64, height=48)
    if listing == "manifest":
        write_manifest(src)
    ng = nginx(src, autoindex=(listing == "autoindex"))
    m = mount(ng.url)
    ds_src, x_src, y_src = _load(src)
    ds_mnt, x_mnt, y_mnt = _load(m.path)
    assert ds_mnt.classes == ds_src.classes == ["class_00", "class_01", "class_02"]
    assert ds_mnt.class_to_idx == ds_src.class_to_idx
    rel = lambda ds, root: [(str(p)[len(str(root)):], t) for p, t in ds.samples]  # noqa: E731
    assert rel(ds_mnt, m.path) == rel(ds_src, src)
    assert len(ds_mnt) == 15
    assert torch.equal(y_mnt, y_src)
    assert x_mnt.shape == x_src.shape == (15, 3, 40, 40)
    assert torch.equal(x_mnt, x_src), "decoded tensors differ"
    # autoindex: the probe for an optional prestofs.manifest (404) counts as one
    s = m.stats()
    assert s["origin"]["errors"] <= (1 if listing == "autoindex" else 0), s
