"""Writing a family's files all or none, and finding files whatever the case of their names."""

import pytest
from retro_models.formats.files import files_in, find_file, search_folders, write_files


def test_every_file_or_none(tmp_path):
    (tmp_path / "a.tmd").write_bytes(b"old")
    written = write_files({str(tmp_path / "a.tmd"): b"new", str(tmp_path / "a.tkl"): b"keys"})
    assert written == [str(tmp_path / "a.tmd"), str(tmp_path / "a.tkl")]
    assert (tmp_path / "a.tmd").read_bytes() == b"new"
    (tmp_path / "a.tml").mkdir()  # a folder where a file should go
    with pytest.raises(IsADirectoryError):
        write_files({str(tmp_path / "a.tmd"): b"newer", str(tmp_path / "a.tml"): b"materials"})
    assert (tmp_path / "a.tmd").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tkl", "a.tmd", "a.tml"]


def test_a_failure_midway_puts_the_old_files_back(tmp_path):
    (tmp_path / "a.tmd").write_bytes(b"old")
    with pytest.raises(FileNotFoundError) as error:
        write_files({str(tmp_path / "a.tmd"): b"new", str(tmp_path / "missing" / "a.tkl"): b"keys"})
    assert error.value.filename == str(tmp_path / "missing" / "a.tkl")  # not the temporary name
    assert (tmp_path / "a.tmd").read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.tmd"]


def test_files_in_ignores_case(tmp_path):
    for name in ("Demo.TKL", "demo.tml", "notes.txt"):
        (tmp_path / name).write_bytes(b"")
    assert files_in(str(tmp_path), ".tkl") == {"demo.tkl": str(tmp_path / "Demo.TKL")}
    assert set(files_in(str(tmp_path))) == {"demo.tkl", "demo.tml", "notes.txt"}
    assert set(files_in(str(tmp_path), (".tml", ".txt"))) == {"demo.tml", "notes.txt"}
    assert files_in(str(tmp_path / "absent"), ".tkl") == {}


def test_a_model_s_folder_is_searched_before_the_texture_folder(tmp_path):
    models, textures = tmp_path / "models", tmp_path / "textures"
    models.mkdir(), textures.mkdir()
    (textures / "Both-").write_bytes(b""), (textures / "ONLY_THERE-").write_bytes(b"")
    (models / "both-").write_bytes(b"")
    folders = search_folders(str(models / "c_test"), str(textures))
    assert folders == [str(models), str(textures)]
    assert find_file(folders, "BOTH-") == str(models / "both-")
    assert find_file(folders, "only_there-") == str(textures / "ONLY_THERE-")
    assert find_file(search_folders(str(models / "c_test")), "only_there-") is None
