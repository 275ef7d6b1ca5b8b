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


def pieces(data, sizes=(1, 7, 65536, 333333, BLOCK_BYTES + 5)):
    """`data` cut in uneven pieces, as an HTTP answer arrives."""
    at, k = 0, 0
    while at < len(data):
        n = sizes[k % len(sizes)]
        yield data[at:at + n]
        at, k = at + n, k + 1


@pytest.mark.parametrize("size", SIZES)
def test_the_bytes_given_in_order(tmp_path, size):
    data = os.urandom(size)
    path = str(tmp_path / "f")
    with FileWriter(path) as out:
        for piece in pieces(data):
            out.write(piece)
        direct = out.direct
    assert open(path, "rb").read() == data
    if size >= BLOCK_BYTES and os.uname().sysname == "Linux":
        # tmp_path is on an ordinary disk file system here: the blocks went past the page cache
        # (the tail may have switched it off; a full block was written before that)
        assert direct or size % 4096 != 0


@pytest.mark.parametrize("start", [0, 4096, 5000, BLOCK_BYTES + 17])
def test_a_resumed_file_goes_on_from_its_offset(tmp_path, start):
    head = os.urandom(start)
    rest = os.urandom(2 * BLOCK_BYTES + 123)
    path = tmp_path / "f"
    path.write_bytes(head)
    with FileWriter(str(path), start) as out:
        assert out.direct == (start % 4096 == 0)  # O_DIRECT needs aligned offsets
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


def test_a_file_system_that_refuses_direct_writes_gets_them_through_the_page_cache(
        tmp_path, monkeypatch):
    # Some file systems take the O_DIRECT flag and refuse the writes (EINVAL): the writer drops
    # the flag and writes the same block again.
    real = os.pwrite
    refused = []

    def pwrite(fd, data, offset):
        import fcntl
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            refused.append(offset)
            raise OSError(errno.EINVAL, "Invalid argument")
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
    out.close(sync=False)  # closed already: nothing more


def test_after_a_failure_the_bytes_given_are_kept_for_a_next_try(tmp_path):
    data = os.urandom(BLOCK_BYTES + 100)
    path = str(tmp_path / "f")
    with pytest.raises(RuntimeError):
        with FileWriter(path) as out:
            out.write(data)
            raise RuntimeError("the connection dropped")
    assert open(path, "rb").read() == data
