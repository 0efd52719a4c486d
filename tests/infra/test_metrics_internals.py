"""app/botsvc/metrics.py relies on private parts of prometheus_client: it allocates
each worker's value file before mapping it (a sparse page on a full disk was
a SIGBUS that killed the worker) and chooses the multiprocess values after
the environment names their directory. setup.cfg pins prometheus_client to
one minor range; this test names every private part, so that an upgrade
which changes one fails here, loudly, rather than on a full disk in
production."""
from __future__ import annotations

import inspect
from importlib.metadata import version

from prometheus_client import mmap_dict, values

from botsvc import metrics
from tests.support.pins import pinned


def test_the_installed_prometheus_client_is_the_pinned_minor_range():
    pin = pinned("prometheus_client")
    assert str(pin.specifier) == "<0.27,>=0.26"
    assert version("prometheus_client") in pin.specifier


def test_the_value_file_internals_metrics_allocates_are_there(tmp_path):
    assert mmap_dict._INITIAL_MMAP_SIZE == 1 << 16
    assert list(inspect.signature(mmap_dict.MmapedDict._init_value).parameters) == ["self", "key"]
    mapped = mmap_dict.MmapedDict(str(tmp_path / "counter_1.db"))
    try:
        assert mapped._capacity == mmap_dict._INITIAL_MMAP_SIZE and mapped._used == 8
        assert mapped._f.fileno() >= 0
        for key in ("k", "a" * 3, "b" * 4, "c" * 5, "ü" * 40, "x" * 300):
            before = mapped._used
            mapped._init_value(key)
            assert mapped._used - before == metrics.entry_size(key), key
    finally:
        mapped.close()


def test_the_allocated_file_grows_as_the_parent_does(tmp_path):
    allocated = metrics._AllocatedMmapedDict(str(tmp_path / "histogram_1.db"))
    try:
        for number in range(600):   # past the first 64 KiB
            allocated.write_value(f"key-{number:04d}-" + "v" * 100, float(number), 0.0)
        assert allocated._capacity > mmap_dict._INITIAL_MMAP_SIZE
        assert (tmp_path / "histogram_1.db").stat().st_blocks * 512 >= allocated._capacity
        assert allocated.read_value("key-0599-" + "v" * 100) == (599.0, 0.0)
    finally:
        allocated.close()


def test_the_value_classes_metrics_switches_between_are_there():
    assert values.MutexValue._multiprocess is False
    assert values.MultiProcessValue()._multiprocess is True
    assert hasattr(values, "ValueClass")
    # MultiProcessValue opens its files through the module's name MmapedDict,
    # looked up at open time: metrics.activate puts the allocating one there.
    assert values.MmapedDict in (mmap_dict.MmapedDict, metrics._AllocatedMmapedDict)
    assert "MmapedDict(filename)" in inspect.getsource(values.MultiProcessValue)
