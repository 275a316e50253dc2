"""Archives written back: unchanged archives byte for byte, members replaced with the rest kept,
Yaz0/Yay0 compression on write close to Nintendo's size, J3D animations exported into archives."""

import os
import shutil
import struct

import numpy as np
import pytest
import support
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from retro_models.formats import archives
from retro_models.formats.archives import compression, rarc, u8, writeback
from retro_models.formats.errors import ExportError, FormatError
from retro_models.formats.j3d import files

MARIO = "j3d-models/SunshineMario.arc"
MODEL = "04_tobikomi"  # a model with an animation of each kind beside it, quick to load
U8_FILES = {
    "arc/bmd/model.bmd": b"J3D2bmd3" + bytes(range(200)) * 3,
    "arc/bck/wait.bck": b"J3D1bck1" + bytes(100),
    "arc/bck/run.bck": b"J3D1bck1" + b"run" * 40,
    "arc/empty.bin": b"",
}


def generated_archives() -> dict[str, bytes]:
    """A U8 archive as written by the add-on, plain and inside Yaz0 and Yay0."""
    plain = u8.build(U8_FILES)
    return {
        "generated.u8": plain,
        "generated.szs": compression.compress(plain),
        "generated.szp": compression.compress(plain, compression.YAY0),
    }


def every_archive() -> list[tuple[str, bytes]]:
    real = [(path.name, path.read_bytes()) for path in support.corpus_files("**/*.arc")]
    return real + list(generated_archives().items())


def members(data: bytes, name: str) -> list[tuple[str, bytes, int]]:
    return [tuple(m) for m in archives.read_archive(data, name).members()]


@pytest.mark.parametrize(("name", "data"), every_archive(), ids=lambda v: v if isinstance(v, str) else "")
def test_an_unchanged_archive_is_written_back_byte_for_byte(name, data):
    assert archives.write_archive(archives.read_archive(data, name)) == data
    assert writeback.replace_members(data, name, {}) == data
    # Members "replaced" by their own bytes change nothing either (compressed ones not compressed again).
    same = {m.path: m.data for m in archives.read_archive(data, name).members()}
    assert writeback.replace_members(data, name, same) == data


@pytest.mark.parametrize(("name", "data"), every_archive(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_replaced_member_is_read_back_and_every_other_member_is_unchanged(name, data):
    before = members(data, name)
    path = next(p for p, content, _ in before if content)  # the first member with bytes
    new = b"J3D1bck1 edited" * 7
    written = writeback.replace_members(data, name, {path.upper(): new})  # paths are case-insensitive
    assert written[:4] == data[:4]  # compressed again the same way, or not compressed
    after = members(written, "written")
    assert [(p, f) for p, _, f in after] == [(p, f) for p, _, f in before]  # order, names and flags
    assert [c for p, c, _ in after if p != path] == [c for p, c, _ in before if p != path]
    assert dict((p, c) for p, c, _ in after)[path] == new
    archive = archives.read_archive(written, "written")
    assert archive.directories() == archives.read_archive(data, name).directories()
    plain = archives.unwrap(written)
    if isinstance(archive, rarc.RARC):  # the header's sizes follow; data stays 32-byte aligned
        assert struct.unpack_from(">I", plain, 4)[0] == len(plain)
        assert all(entry.data_offset % 32 == 0 for _, entry in archive.files())
    else:
        assert all(node.first % 32 == 0 for _, node in archive.files())


@pytest.mark.corpus
def test_several_members_replaced_at_once_keep_the_tables():
    data = support.corpus_file(MARIO).read_bytes()
    original = archives.read_archive(data, MARIO)
    new = {"bck/ma_damage_wait.bck": b"A" * 1000, "bmd/ma_cap1.bmd": b"B" * 10}
    written = writeback.replace_members(data, MARIO, new)
    edited = archives.read_archive(written, "written.arc")
    for ours, theirs in zip(edited.entries, original.entries, strict=True):
        assert (ours.name, ours.file_id, ours.flags, ours.name_offset) == (
            theirs.name,
            theirs.file_id,
            theirs.flags,
            theirs.name_offset,
        )
    assert edited.nodes == original.nodes
    size = struct.unpack_from(">I", archives.unwrap(written), 0x14)[0]  # MRAM size: its members grew
    assert size == original.mram_size + sum(len(v) for v in new.values()) - sum(
        len(original.find(p).data) for p in new
    )
    assert {m.path: m.data for m in edited.members() if m.path in new} == new


@pytest.mark.corpus
def test_compression_on_write_is_within_five_percent_of_the_original():
    data = support.corpus_file(MARIO).read_bytes()
    plain = archives.unwrap(data)
    for magic in (compression.YAZ0, compression.YAY0):
        packed = compression.compress(plain, magic)
        assert compression.decompress(packed) == plain
        assert len(packed) <= 1.05 * len(data), (magic, len(packed), len(data))
    written = writeback.replace_members(data, MARIO, {"bck/ma_damage_wait.bck": b"changed" * 9})
    assert written[:4] == b"Yaz0" and len(written) <= 1.05 * len(data)


def test_a_damaged_archive_or_a_missing_member_names_the_archive():
    data = generated_archives()["generated.szs"]
    with pytest.raises(FormatError, match=r"broken\.szs: at offset \d+ .*Yaz0 stream ends"):
        writeback.replace_members(data[: len(data) // 2], "broken.szs", {"arc/bck/wait.bck": b"x"})
    damaged = bytearray(u8.build(U8_FILES))
    struct.pack_into(">I", damaged, 0x20 + 8, 5000)  # the root's node count
    with pytest.raises(FormatError, match=r"damaged\.arc: .*5000 × node"):
        writeback.replace_members(bytes(damaged), "damaged.arc", {"arc/bck/wait.bck": b"x"})
    with pytest.raises(ExportError, match=r"game\.szs has no member 'bck/jump\.bck' .*arc/bck/run\.bck"):
        writeback.replace_members(data, "game.szs", {"bck/jump.bck": b"x"})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(generated_archives())),
    st.lists(st.tuples(st.integers(0, 0x1FF), st.integers(0, 255)), min_size=1, max_size=6),
)
def test_damaged_archives_are_written_back_or_give_one_error(name, changes):
    data = bytearray(generated_archives()[name])
    for offset, value in changes:
        data[offset % len(data)] = value
    try:
        written = writeback.replace_members(bytes(data), name, {"arc/bck/run.bck": b"new"})
    except (FormatError, ExportError):
        return
    before = members(bytes(data), name)
    after = members(written, name)
    assert [(p, c) for p, c, _ in after if p.lower() != "arc/bck/run.bck"] == [
        (p, c) for p, c, _ in before if p.lower() != "arc/bck/run.bck"
    ]


# -- J3D animations exported into an archive ------------------------------------------------------


def _archive_copy(tmp_path) -> str:
    path = tmp_path / "mario.szs"
    shutil.copyfile(support.corpus_file(MARIO), path)
    return str(path)


def _member_scene(path: str, member: str):
    """The scene an animation imported from the archive has (the member recorded)."""
    (model,) = files.load_model(path, files.ModelImportOptions(model=MODEL))
    assert model.extras[files.ARCHIVE_MEMBER] == f"{MODEL}/{MODEL}.bmd"
    found = [p for p in model.paired if p.animations[0].extras.get(files.ARCHIVE_MEMBER) == member]
    assert found, [p.animations[0].extras.get(files.ARCHIVE_MEMBER) for p in model.paired]
    return found[0]


@pytest.mark.corpus
def test_an_animation_exports_into_the_member_it_came_from(tmp_path):
    path = _archive_copy(tmp_path)
    original = open(path, "rb").read()
    member = "04_tobikomi/04_tobikomi.bck"
    scene = _member_scene(path, member)
    assert files.save(scene, path, files.ExportOptions()) == [path]
    assert open(path, "rb").read() == original  # unchanged: the very same bytes
    channel = next(c for c in scene.animations[0].channels if len(c.times) > 2)
    channel.values = np.array(channel.values, float)
    channel.values[1] += 0.25
    channel.origin = None  # edited
    files.save(scene, path, files.ExportOptions())
    before, after = (dict((p, c) for p, c, _ in members(d, "x")) for d in (original, open(path, "rb").read()))
    assert [p for p in before if before[p] != after[p]] == [member]
    reread = files.load_animation(after[member], member)
    edited = next(
        c for c in reread.animations[0].channels if (c.target, c.path) == (channel.target, channel.path)
    )
    assert np.allclose(np.asarray(edited.values)[1], channel.values[1], atol=1e-3)


@pytest.mark.corpus
def test_exporting_into_an_archive_needs_a_member_that_exists(tmp_path):
    path = _archive_copy(tmp_path)
    scene = _member_scene(path, "04_tobikomi/04_tobikomi.bck")
    with pytest.raises(ExportError, match=r"mario\.szs has no member 'bck/nothing\.bck'"):
        files.save(scene, path, files.ExportOptions(member="bck/nothing.bck"))
    del scene.animations[0].extras[files.ARCHIVE_MEMBER]
    with pytest.raises(ExportError, match=r"mario\.szs: name the archive member to replace"):
        files.save(scene, path, files.ExportOptions())
    with pytest.raises(ExportError, match=r"no archive there"):
        files.save(
            scene, str(tmp_path / "new.arc"), files.ExportOptions(member="04_tobikomi/04_tobikomi.bck")
        )
    assert not os.path.exists(tmp_path / "new.arc")
    assert sorted(os.listdir(tmp_path)) == ["mario.szs"]  # no temporary file left behind
    # The named member is written even when the animation came from elsewhere.
    files.save(scene, path, files.ExportOptions(member="04_TOBIKOMI/04_tobikomi.BCK"))
    assert (
        archives.read_archive(open(path, "rb").read(), path).find("04_tobikomi/04_tobikomi.bck") is not None
    )


@pytest.mark.corpus
@pytest.mark.parametrize("replaced", ["first", "second"])
def test_members_sharing_their_data_part_when_one_is_replaced(replaced):
    plain = bytearray(archives.unwrap(support.corpus_file(MARIO).read_bytes()))
    archive = rarc.read(bytes(plain), MARIO)
    (first, a), (second, b) = archive.files()[:2]
    # The second entry's data made the first's, as an archive storing one file under two names has it.
    at = rarc.HEADER_SIZE + archive.entry_offset + archive.entries.index(b) * rarc.ENTRY_SIZE
    struct.pack_into(">II", plain, at + 8, a.data_offset, a.size)
    shared = bytes(plain)
    before = dict((p, c) for p, c, _ in members(shared, "shared.arc"))
    assert before[first] == before[second]
    assert writeback.replace_members(shared, "shared.arc", {}) == shared
    path = first if replaced == "first" else second
    after = dict(
        (p, c) for p, c, _ in members(writeback.replace_members(shared, "shared.arc", {path: b"new"}), "x")
    )
    assert after.pop(path) == b"new"
    before.pop(path)
    assert after == before


@pytest.mark.corpus
def test_a_compressed_member_is_compressed_again_as_it_was():
    archive = rarc.read(support.corpus_file("j3d-models/SunshineMariod.arc").read_bytes(), "packed.arc")
    ((path, entry),) = archive.files()
    reserved = b"\0\0\x20\0ABCD"  # what some tools leave in a Yaz0 header
    entry.stored = compression.compress(archive.find(path).data, compression.YAZ0, reserved)
    entry.flags |= rarc.COMPRESSED | rarc.YAZ0
    packed = rarc.write(archive)
    assert writeback.replace_members(packed, "packed.arc", {path: archive.find(path).data}) == packed
    written = writeback.replace_members(packed, "packed.arc", {path: b"J3D1btk1 new"})
    ((_, stored),) = rarc.read(written, "written.arc").files()
    assert stored.stored[:4] == b"Yaz0" and stored.stored[8:16] == reserved
    assert rarc.read(written, "written.arc").find(path).data == b"J3D1btk1 new"
