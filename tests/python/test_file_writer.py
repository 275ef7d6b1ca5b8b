"""FileWriter (python/cohort/_file_writer.py): the bytes given, in order, at their offsets, for
sizes around the block and the alignment, from the start or from a resumed offset; past the
page cache where the file system takes O_DIRECT, through it where it refuses the flag or the
writes; an error of the writing thread raised to the caller."""
import errno
import os

import pytest

import sdk_helpers  # noqa: F401  (puts the package on sys.path)
from cohort import _file_writer
from cohort._file_writer import BLOCK_BYTES, FileWriter

SIZES = [0, 1, 4095, 4096, 4097, BLOCK_BYTES - 1, BLOCK_BYTES, BLOCK_BYTES + 1,
         3 * BLOCK_BYTES + BLOCK_BYTES // 2 + 3]


@pytest.fixture
def takes_direct(tmp_path):
    """Whether tmp_path's file system takes O_DIRECT (tmpfs before Linux 6.6 does not)."""
    import fcntl
    fd = os.open(str(tmp_path / "probe"), os.O_WRONLY | os.O_CREAT)
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_DIRECT)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
        os.remove(str(tmp_path / "probe"))


def pieces(data, sizes=(1, 7, 65536, 333333, BLOCK_BYTES + 5)):
    """`data` cut in uneven pieces, as an HTTP answer arrives."""
    at, k = 0, 0
    while at < len(data):
        n = sizes[k % len(sizes)]
        yield data[at:at + n]
        at, k = at + n, k + 1


@pytest.mark.parametrize("size", SIZES)
def test_the_bytes_given_in_order(tmp_path, size, takes_direct):
    data = os.urandom(size)
    path = str(tmp_path / "f")
    with FileWriter(path) as out:
        direct_at_start = out.direct
        for piece in pieces(data):
            out.write(piece)
    assert open(path, "rb").read() == data
    assert direct_at_start == takes_direct


def test_a_file_there_before_is_replaced_not_overwritten_in_part(tmp_path):
    # From offset 0 the file is truncated: an older, longer file (a copy left by a process
    # killed midway) keeps no tail after the new bytes.
    path = tmp_path / "f"
    path.write_bytes(b"old" * (BLOCK_BYTES // 2))
    data = os.urandom(BLOCK_BYTES // 3)
    with FileWriter(str(path)) as out:
        out.write(data)
    assert path.read_bytes() == data
    path.write_bytes(b"old" * 1000)
    with _file_writer.PlainWriter(str(path)) as out:
        out.write(b"new")
    assert path.read_bytes() == b"new"


@pytest.mark.parametrize("start", [0, 4096, 5000, BLOCK_BYTES + 17])
def test_a_resumed_file_goes_on_from_its_offset(tmp_path, start, takes_direct):
    head = os.urandom(start)
    rest = os.urandom(2 * BLOCK_BYTES + 123)
    path = tmp_path / "f"
    path.write_bytes(head)
    with FileWriter(str(path), start) as out:
        assert out.direct == (takes_direct and start % 4096 == 0)  # O_DIRECT: aligned offsets
        for piece in pieces(rest):
            out.write(piece)
    assert path.read_bytes() == head + rest


def test_through_the_page_cache_when_asked(tmp_path):
    data = os.urandom(2 * BLOCK_BYTES + 9)
    path = str(tmp_path / "f")
    with FileWriter(path, direct=False) as out:
        assert not out.direct
        out.write(data)
    assert open(path, "rb").read() == data


@pytest.mark.parametrize("err", [errno.EINVAL, errno.EOPNOTSUPP])
def test_a_file_system_that_refuses_direct_writes_gets_them_through_the_page_cache(
        tmp_path, monkeypatch, takes_direct, err):
    if not takes_direct:
        pytest.skip("tmp_path's file system refuses O_DIRECT at fcntl already")
    # Some file systems take the O_DIRECT flag and refuse the writes (EINVAL): the writer drops
    # the flag and writes the same block again.
    real = os.pwrite
    refused = []

    def pwrite(fd, data, offset):
        import fcntl
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            refused.append(offset)
            raise OSError(err, os.strerror(err))
        return real(fd, data, offset)

    monkeypatch.setattr(_file_writer.os, "pwrite", pwrite)
    data = os.urandom(3 * BLOCK_BYTES)
    path = str(tmp_path / "f")
    with FileWriter(path) as out:
        out.write(data)
    assert open(path, "rb").read() == data
    assert refused == [0]  # once: the flag is dropped for the rest


def test_an_error_of_the_writing_thread_reaches_the_caller(tmp_path, monkeypatch):
    def pwrite(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_file_writer.os, "pwrite", pwrite)
    out = FileWriter(str(tmp_path / "f"))
    with pytest.raises(OSError) as e:
        for _ in range(4):  # the first block's error comes with a later write or the close
            out.write(b"x" * BLOCK_BYTES)
        out.close()
    assert e.value.errno == errno.ENOSPC
    with pytest.raises(OSError) as again:  # the bytes were not all written: said again
        out.close()
    assert again.value.errno == errno.ENOSPC
    out.close()  # closed now: nothing more


def test_after_a_failure_the_bytes_given_are_kept_for_a_next_try(tmp_path):
    data = os.urandom(BLOCK_BYTES + 100)
    path = str(tmp_path / "f")
    with pytest.raises(RuntimeError):
        with FileWriter(path) as out:
            out.write(data)
            raise RuntimeError("the connection dropped")
    assert open(path, "rb").read() == data
