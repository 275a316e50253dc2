"""Menus, file-browser option panels, drag-and-drop handlers and sidebar panels."""


def register():
    pass


def unregister():
    pass
