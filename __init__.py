"""Retro Game Models: import and export models and animations of classic games.

The package root is a Blender extension. Importing it has no side effects;
Blender calls ``register()`` when the extension is enabled, which also adds the batch import to
Blender's command line (``blender -b -c retro_import --help``; operators/batch.py).

Scripts import and export through two functions, the same whether the add-on runs
from a checkout (``retro_models``) or installed (``bl_ext.user_default.retro_models``)::

    import bpy
    from bl_ext.user_default import retro_models

    report = retro_models.import_file(bpy.context, "/games/jpog/trex.tmd", lods="ALL")
    print(report.counts, report.warnings)
    report = retro_models.export_file(bpy.context, "/out/trex.tmd", tkl_mode="NEW", new_tkl_name="trex")
    print(report.paths, report.warnings)

Options are the operators' property names (their defaults when left out; see each family's
options in formats/<family>/files.py); an unknown name is a TypeError naming it. On failure
they raise ``FormatError`` (a file that does not match its format), ``ExportError`` (data the
format cannot hold), ``SelectionError`` (nothing selected that the file applies to) or
``OSError``, all but the last from ``retro_models.formats.errors``; Blender's data is then
left as it was and no file is written.
"""

# Blender reloads the add-on by re-importing this module: keep imports lazy.


def import_file(context, path: str, **options):
    """Import one file (its family chosen by extension, then by content) as File > Import does.

    Returns an ``ImportReport``: ``counts`` of what was made per kind of datablock,
    ``warnings``, ``notes`` (where a file applied to the selection went) and ``summary``.
    """
    from .operators.import_export import import_file as run

    return run(context, path, **options)


def export_file(context, path: str, *, family: str = "", **options):
    """Export the selection to ``path`` as File > Export does.

    The family ("toshi", "tamsoft", "j3d", "tmrf", "ttyd") is the one whose files have the
    path's extension; name it when several do (.tmd) or the path has none. Returns an
    ``ExportReport``: every written path (``paths``) and the ``warnings``.
    """
    from .operators.import_export import export_file as run

    return run(context, path, family=family, **options)


_cli_command = None  # the handle of ``blender -c retro_import``


def register():
    import bpy

    from . import operators, ui
    from .operators import batch

    global _cli_command
    operators.register()
    ui.register()
    _cli_command = bpy.utils.register_cli_command(batch.COMMAND, batch.cli)


def unregister():
    import bpy

    from . import operators, ui

    global _cli_command
    if _cli_command is not None:
        bpy.utils.unregister_cli_command(_cli_command)
        _cli_command = None
    ui.unregister()
    operators.unregister()
