"""Yaz0, Yay0, RARC and U8: decoding every token kind, round trips, the real archives, bad input."""

import struct
import time

import pytest
import support
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from retro_models.formats import archives, inspect, registry
from retro_models.formats.archives import compression, rarc, u8
from retro_models.formats.errors import FormatError

MARIO = "j3d-models/SunshineMario.arc"
MARIO_DEMO = "j3d-models/SunshineMariod.arc"


def expand(parse):
    """The output of a token list, byte by byte: the reference the vectorised decoder must match."""
    out = bytearray()
    for length, value in parse:
        if length == 0:
            out.append(value)
        else:
            for _ in range(length):
                out.append(out[-value])
    return bytes(out)


# Every token kind: literals, a short copy (2-byte reference), a long one (3-byte, length
# 0x12…0x111), copies that overlap their own output (distance < length), the farthest
# distance, the longest copy, and a last code byte only partly used (13 tokens).
EVERY_KIND = (
    [(0, b) for b in b"abcdefgh"]
    + [(5, 8), (3, 1), (0x11, 2), (0x12, 3), (0x111, 1), (0, 0x7A), (0x40, 0x17)]
    + [(0, i & 0xFF) for i in range(3800)]
    + [(10, 0x1000), (0, 0xFF)]
)


def test_a_hand_written_yaz0_stream():
    # E8 = 1110 1000: three literals, a copy of 9 bytes from 3 back (N=7, D=2), a literal, a
    # copy 1 back of 0x12 + 5 bytes (N=0: a third byte); the code's last two bits unused.
    stream = bytes([0xE8]) + b"abc" + bytes([0x70, 0x02]) + b"X" + bytes([0x00, 0x00, 0x05])
    data = b"Yaz0" + struct.pack(">I", 13 + 23) + bytes(8) + stream
    assert compression.decompress(data, "hand.szs") == b"abcabcabcabcX" + b"X" * 23


@pytest.mark.parametrize("magic", [compression.YAZ0, compression.YAY0])
def test_every_token_kind_decodes_as_written(magic):
    expected = expand(EVERY_KIND)
    packed = compression.pack(EVERY_KIND, len(expected), magic)
    assert compression.decompress(packed, "kinds") == expected
    for limit in (1, 7, 8, 9, 500, len(expected), len(expected) + 10):
        assert compression.decompress(packed, "kinds", limit=limit) == expected[:limit]


@pytest.mark.parametrize("magic", [compression.YAZ0, compression.YAY0])
def test_compress_round_trips_and_uses_copies(magic):
    data = b"".join(bytes([i % 7]) * (i % 40) + b"header%03d" % i for i in range(300)) + bytes(range(256))
    packed = compression.compress(data, magic)
    assert compression.decompress(packed) == data
    assert len(packed) < len(data) // 2
    assert compression.decompress(compression.compress(b"", magic)) == b""
    assert compression.decompress(compression.compress(b"xy", magic)) == b"xy"


def test_the_encoder_finds_the_longest_match_in_the_window():
    data = bytes(range(1, 201)) + bytes(3000) + bytes(range(1, 201))
    parse = [tuple(token) for token in compression.tokens(data).tolist()]
    assert (200, 3200) in parse  # the first 200 bytes again, 3200 back
    assert expand(parse) == data
    assert all(length == 0 or 3 <= length <= 0x111 and 1 <= value <= 0x1000 for length, value in parse)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.sampled_from([compression.YAZ0, compression.YAY0]))
def test_any_data_round_trips(data, magic):
    assert compression.decompress(compression.compress(data, magic)) == data


def test_bad_compressed_streams_name_the_offset():
    packed = compression.pack(EVERY_KIND, len(expand(EVERY_KIND)))
    with pytest.raises(
        FormatError, match=r"cut\.szs: at offset 200 .*Yaz0 stream ends after \d+ of"
    ) as error:
        compression.decompress(packed[:200], "cut.szs")
    assert error.value.offset == 200
    # A copy from before the start: the first token is a reference 2 back.
    early = b"Yaz0" + struct.pack(">I", 4) + bytes(8) + bytes([0x7F, 0x20, 0x01]) + b"abcd"
    with pytest.raises(FormatError, match=r"offset 17 .*back-reference 2 bytes back at output byte 0"):
        compression.decompress(early, "early.szs")
    absurd = b"Yaz0" + struct.pack(">I", 0xFFFFFFF0) + bytes(8) + bytes(16)
    with pytest.raises(FormatError, match=r"offset 4 .*declared size 4294967280 is more than"):
        compression.decompress(absurd, "absurd.szs")
    with pytest.raises(FormatError, match="Yay0 literal stream offset 999"):
        compression.decompress(b"Yay0" + struct.pack(">III", 4, 16, 999) + bytes(8), "bad.szp")
    with pytest.raises(FormatError, match="offset 0 .*needs 16 bytes"):
        compression.decompress(b"Yaz0\0\0", "short.szs")
    yay0 = compression.pack(EVERY_KIND, len(expand(EVERY_KIND)), compression.YAY0)
    with pytest.raises(FormatError, match="Yay0 streams end after"):
        compression.decompress(yay0[:-40], "cut.szp")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([b"Yaz0", b"Yay0"]), st.integers(0, 5000), st.binary(max_size=600))
def test_random_streams_decode_or_give_one_format_error(magic, size, body):
    data = magic + struct.pack(">I", size) + body[:8].ljust(8, b"\0") + body[8:]
    if magic == b"Yay0":  # stream offsets inside the file, wherever they point
        end = len(data)
        data = data[:8] + struct.pack(">II", 16 + body[0] % end if body else 16, 16) + data[16:]
    started = time.perf_counter()
    try:
        out = compression.decompress(data, "fuzz")
    except FormatError as error:
        assert 0 <= error.offset <= len(data)
    else:
        assert len(out) == size
    assert time.perf_counter() - started < 2


# -- RARC --------------------------------------------------------------------------------------


@pytest.mark.corpus
def test_the_real_yaz0_archive_lists_its_members_and_round_trips():
    data = support.corpus_file(MARIO).read_bytes()
    plain = archives.unwrap(data, MARIO)
    assert plain[:4] == b"RARC" and len(plain) == compression.declared_size(data)
    archive = archives.read_archive(data, MARIO)
    assert archive.wrapping == [(b"Yaz0", bytes(8))]
    assert rarc.write(archive) == plain
    assert len(archive.directories()) == 17
    members = list(archive.members())
    assert len(members) == 422
    assert sum(m.path.endswith(".bmd") for m in members) == 26
    assert sum(m.path.endswith(".bck") for m in members) == 237
    assert {m.flags for m in members} == {rarc.FILE | rarc.LOAD_TO_MRAM}
    model = archive.find("BMD/MA_MDL1.bmd")
    assert model.path == "bmd/ma_mdl1.bmd" and model.data[:8] == b"J3D2bmd3"
    assert archive.find("bmd/nothing.bmd") is None
    assert archives.is_archive(data) and archives.is_archive(plain)
    assert archives.header(data, MARIO, 64) == plain[:64]


@pytest.mark.corpus
def test_the_plain_archive_round_trips_and_keeps_its_flags():
    data = support.corpus_file(MARIO_DEMO).read_bytes()
    archive = archives.read_archive(data, MARIO_DEMO)
    assert archives.write_archive(archive) == data
    (member,) = archive.members()
    assert member.path == "btk/watergun_water.btk" and member.flags == 0x21
    assert member.data[:8] == b"J3D1btk1"
    assert archive.directories() == ["", "btk"]


@pytest.mark.corpus
def test_a_replaced_member_moves_the_data_after_it():
    data = archives.unwrap(support.corpus_file(MARIO).read_bytes())
    archive = rarc.read(data, MARIO)
    before = {m.path: m.data for m in archive.members()}
    archive.replace("01_WATERBOOST/01_waterboost.btk", b"new" * 11)
    edited = rarc.read(rarc.write(archive), "edited.arc")
    after = {m.path: m.data for m in edited.members()}
    assert after.pop("01_waterboost/01_waterboost.btk") == b"new" * 11
    before.pop("01_waterboost/01_waterboost.btk")
    assert after == before
    offsets = [entry.data_offset for _, entry in edited.files()]
    assert all(offset % 32 == 0 for offset in offsets)
    assert edited.data_size == archive.data_size - (800 - 64)
    with pytest.raises(KeyError):
        archive.replace("no/such.bck", b"")


@pytest.mark.corpus
def test_little_endian_crar_and_compressed_members():
    archive = rarc.read(support.corpus_file(MARIO_DEMO).read_bytes(), MARIO_DEMO)
    original = archive.find("btk/watergun_water.btk").data
    archive.endian = "<"
    crar = rarc.write(archive)
    assert crar[:4] == b"CRAR" and struct.unpack_from("<I", crar, 4)[0] == len(crar)
    again = rarc.read(crar, "little.arc")
    assert rarc.write(again) == crar
    assert again.find("BTK/watergun_water.BTK").data == original
    # A member stored Yaz0-compressed (flags 0x04 | 0x80) is decompressed on access.
    ((path, entry),) = again.files()
    entry.stored = compression.compress(original)
    entry.flags |= rarc.COMPRESSED | rarc.YAZ0
    packed = rarc.read(rarc.write(again), "packed.arc")
    assert packed.find(path).data == original
    assert packed.files()[0][1].stored[:4] == b"Yaz0"
    packed.replace(path, original[:100])  # compressed again, as the archive stored it
    assert packed.files()[0][1].stored[:4] == b"Yaz0"
    assert rarc.read(rarc.write(packed), "x").find(path).data == original[:100]


@pytest.mark.corpus
def test_bad_archives_name_the_offset_and_the_member():
    data = support.corpus_file(MARIO_DEMO).read_bytes()
    with pytest.raises(FormatError, match=r"cut\.arc: at offset 12 .*data area at 288 starts past the end"):
        rarc.read(data[:0x48], "cut.arc")
    with pytest.raises(
        FormatError, match=r"offset 288 .*data of btk/watergun_water\.btk \(320 bytes\) lies outside"
    ):
        rarc.read(data[:0x200], "cut.arc")
    wrong_node = bytearray(data)
    struct.pack_into(">I", wrong_node, 0x20, 200)  # 200 nodes
    with pytest.raises(FormatError, match="200 × node"):
        rarc.read(bytes(wrong_node), "nodes.arc")
    # Found by the fuzzer: a directory entry naming no node, tables running into the data area.
    no_node = bytearray(data)
    no_node[0x8D:0x90] = (5).to_bytes(3, "big")  # the root's '..' (node 0xFFFFFFFF) renamed 'mario'
    with pytest.raises(FormatError, match="offset 144 .*directory mario names node 4294967295 of 2"):
        rarc.read(bytes(no_node), "dir.arc")
    small = bytearray(data)
    struct.pack_into(">I", small, 0x0C, 1)  # the data area right after the header
    with pytest.raises(FormatError, match="offset 32 .*expected info block"):
        rarc.read(bytes(small), "small.arc")
    archive = rarc.read(data, MARIO_DEMO)
    ((path, entry),) = archive.files()
    entry.stored = b"Yaz0" + struct.pack(">I", 3) + bytes(8) + bytes([0x00, 0x10, 0x00])  # copy 1 back at 0
    entry.flags |= rarc.COMPRESSED | rarc.YAZ0
    broken = rarc.read(rarc.write(archive), "broken.arc")
    with pytest.raises(
        FormatError, match=r"broken\.arc/btk/watergun_water\.btk: at offset 17 .*back-reference"
    ):
        list(broken.members())
    with pytest.raises(FormatError, match="not a RARC or U8 archive"):
        archives.read_archive(b"J3D1bck1" + bytes(40), "x.arc")


@pytest.mark.corpus
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 0x25F), st.integers(0, 255)), min_size=1, max_size=6))
def test_mutated_archives_read_or_give_one_format_error(changes):
    data = bytearray(support.corpus_file(MARIO_DEMO).read_bytes())
    for offset, value in changes:
        data[offset] = value
    try:
        archive = archives.read_archive(bytes(data), "mutated.arc")
        for member in archive.members():
            assert archive.find(member.path) is not None
        archives.write_archive(archive)
    except FormatError:
        pass


# -- U8 ----------------------------------------------------------------------------------------

U8_FILES = {
    "arc/model.bmd": b"J3D2bmd3" + bytes(range(40)),
    "arc/anim/Wait.bck": b"J3D1bck1" + bytes(100),
    "arc/anim/run.bck": b"J3D1bck1" + bytes(7),
    "arc/empty.bin": b"",
    "top.txt": b"hello",
}


def test_u8_archives_follow_the_structure_rules_and_round_trip():
    data = u8.build(U8_FILES)
    archive = u8.read(data, "test.u8")
    assert u8.write(archive) == data
    nodes = archive.nodes
    assert data[:4] == u8.MAGIC and struct.unpack_from(">I", data, 4)[0] == 0x20
    assert nodes[0].type == u8.DIRECTORY and nodes[0].second == len(nodes) and nodes[0].name == ""
    assert nodes[1].name == "." and nodes[1].second == len(nodes)  # the usual top directory
    assert archive.data_offset % 32 == 0 and data[0x10:0x20] == u8.RESERVED
    for index, node in enumerate(nodes[1:], 1):
        if node.type == u8.DIRECTORY:
            # the parent encloses it: its own range holds this directory's
            parent = nodes[node.first]
            assert node.first < index and index < node.second <= (parent.second if node.first else len(nodes))
        else:
            assert node.first % 32 == 0 and node.first >= archive.data_offset
    assert {m.path: m.data for m in archive.members()} == U8_FILES
    assert archive.directories() == ["", "arc", "arc/anim"]
    assert archive.find("ARC/ANIM/wait.BCK").data == U8_FILES["arc/anim/Wait.bck"]
    archive.replace("arc/anim/run.bck", b"longer" * 20)
    edited = u8.read(u8.write(archive), "edited.u8")
    assert edited.find("arc/anim/run.bck").data == b"longer" * 20
    assert edited.find("top.txt").data == b"hello"
    assert (
        archives.read_archive(compression.compress(data), "test.szs").find("arc/model.bmd").data[:4]
        == b"J3D2"
    )
    assert archives.is_archive(compression.compress(data, compression.YAY0))
    for magic in (compression.YAZ0, compression.YAY0):  # written back inside the same compression
        wrapped = archives.read_archive(compression.compress(data, magic), "test.szs")
        again = archives.write_archive(wrapped)
        assert again[:4] == magic and archives.unwrap(again) == data


def test_bad_u8_archives_name_the_node():
    data = bytearray(u8.build(U8_FILES))
    # node 2 is the directory 'arc' (after the root and '.'): give it a parent that does not enclose it
    struct.pack_into(">I", data, 0x20 + 2 * 12 + 4, 0)
    with pytest.raises(FormatError, match=r"bad\.u8: at offset 60 .*directory arc names parent 0, not 1"):
        u8.read(bytes(data), "bad.u8")
    data = bytearray(u8.build(U8_FILES))
    struct.pack_into(">I", data, 0x20 + 2 * 12 + 8, 99)
    with pytest.raises(FormatError, match="directory arc ends at node 99"):
        u8.read(bytes(data), "bad.u8")
    data = bytearray(u8.build(U8_FILES))
    struct.pack_into(">I", data, 0x20 + 8, 5000)  # the root's node count
    with pytest.raises(FormatError, match="5000 × node"):
        u8.read(bytes(data), "bad.u8")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 0xFF), st.integers(0, 255)), min_size=1, max_size=6))
def test_mutated_u8_archives_read_or_give_one_format_error(changes):
    data = bytearray(u8.build(U8_FILES))
    for offset, value in changes:
        data[offset % len(data)] = value
    try:
        archive = u8.read(bytes(data), "mutated.u8")
        list(archive.members())
        u8.write(archive)
    except FormatError:
        pass


# -- detection and inspection ------------------------------------------------------------------


@pytest.mark.corpus
def test_inspection_lists_the_tree_and_what_each_member_is():
    text = inspect.summarize(support.corpus_file(MARIO).read_bytes(), "SunshineMario.arc")
    lines = text.splitlines()
    assert lines[0].startswith(
        "SunshineMario.arc: RARC archive (big-endian), root 'mario' in Yaz0, 17 directories, 422"
    )
    assert "  bmd/" in lines
    assert any(line.startswith("    ma_mdl1.bmd  117248 bytes, flags 0x11  J3D") for line in lines)
    assert "237 × J3D animation / material set (J3D1bck1)" in lines[-1]


@pytest.mark.corpus
def test_a_compressed_animation_is_detected_and_summarised_by_its_content():
    data = support.corpus_file("j3d-models/wait01.bck").read_bytes()
    packed = compression.compress(data)
    assert registry.family_for("wait01.szs", packed[: registry.HEADER_SIZE]).name == "j3d"
    assert registry.family_for("anything", packed).name == "j3d"
    text = inspect.summarize(packed, "wait01.szs")
    assert text.startswith(f"wait01.szs: Yaz0-compressed, {len(packed)} bytes\nwait01.szs: J3D bck1")
    assert registry.kind_of(data, "wait01.bck") == "J3D animation / material set (J3D1bck1)"
    assert registry.kind_of(b"\0\1\2", "x.bas") == "unknown"


@pytest.mark.corpus
def test_a_yay0_file_is_detected_from_its_path(tmp_path):
    data = support.corpus_file("j3d-models/dead.bck").read_bytes()
    packed = compression.compress(data, compression.YAY0)
    assert len(packed) > registry.HEADER_SIZE  # the header alone misses the streams
    assert len(archives.header(packed[: registry.HEADER_SIZE], "cut.szp", 64)) <= 64
    path = tmp_path / "dead.szp"
    path.write_bytes(packed)
    assert registry.family_for(str(path)).name == "j3d"
