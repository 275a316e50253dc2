"""Readable summaries of TMRF files: strings, the resource tree, counts and hints."""

from __future__ import annotations

from . import media
from . import resources as res

STRING_LIMIT = 40


def detect(data: bytes, name: str) -> bool:
    return data[:8] == media.MAGIC


def _details(model: media.MediaFile, content: object) -> str:
    name = model.strings.name
    if isinstance(content, res.TableOfContents):
        return f"{len(content.names)} entries"
    if isinstance(content, res.Hints):
        return f"{len(content.counts)} hints"
    if isinstance(content, res.Skeleton):
        return f"{len(content.bones)} bones"
    if isinstance(content, res.PointList):
        return f"{len(content.points)} points"
    if isinstance(content, res.SkeletalDeform):
        return (
            f"skeleton {name(content.skeleton)!r}, {len(content.bindings)} bindings, "
            f"{len(content.weight_counts)} blends, {len(content.weights)} weights"
        )
    if isinstance(content, res.FrameAnimation):
        flags = sorted({b.flags for b in content.bones})
        return (
            f"skeleton {name(content.skeleton)!r}, {content.frame_count} frames at {float(content.fps):g} fps, "
            f"{len(content.bones)} bones, flags {flags}"
        )
    if isinstance(content, res.TrackAnimation):
        keys = sum(len(t) for t in content.tracks)
        return (
            f"{name(content.name)!r} on skeleton {name(content.skeleton)!r}, {float(content.length):g} s, "
            f"{len(content.bindings)} bones, {keys} keys"
        )
    if isinstance(content, res.TriangleMesh):
        return (
            f"points {name(content.point_list)!r}, {len(content.vertex_points)} vertices, "
            f"{len(content.triangles)} triangles"
        )
    if isinstance(content, res.Texture):
        return f"texture {name(content.texture)!r}"
    if isinstance(content, res.Opaque):
        return "kept as bytes"
    return ""


def summarize(data: bytes, name: str) -> str:
    model = media.read(data, name)
    strings = model.strings.texts()
    shown = ", ".join(repr(s) for s in strings[:STRING_LIMIT])
    more = f", … ({len(strings)} in all)" if len(strings) > STRING_LIMIT else ""
    lines = [
        f"{name}: TMRF version {model.version} ({len(data)} bytes)",
        f"  strings ({len(strings)}, pool {len(model.strings.pool)} bytes): {shown}{more}",
        "  resources:",
    ]
    names = model.names()
    depth = {}
    spans = media.resource_spans(model)
    for i, resource in enumerate(model.walk()):
        for child in resource.children:
            depth[id(child)] = depth.get(id(resource), 0) + 1
        label, dtl = names.get(i, (None, None))
        offset, size = spans[i]
        text = f"    {'  ' * depth.get(id(resource), 0)}{model.type_name(resource)}"
        text += f" {label!r}" if label is not None else ""
        text += f" at {offset} ({size} bytes"
        text += f", DTL {dtl!r})" if dtl is not None else ")"
        details = _details(model, resource.content)
        lines.append(text + (f": {details}" if details else ""))
    for resource in model.walk():
        if isinstance(resource.content, res.Hints):
            lines.append("  hints:")
            for t, d, c in zip(
                resource.content.types, resource.content.data_types, resource.content.counts, strict=True
            ):
                lines.append(f"    {model.strings.text(int(t))}/{model.strings.text(int(d))}: {int(c)}")
    lines += [f"  warning: {w}" for w in model.warnings]
    return "\n".join(lines)
