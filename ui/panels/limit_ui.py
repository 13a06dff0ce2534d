# SPDX-License-Identifier: GPL-3.0-or-later
"""Drawing one bone's limit settings and the rig's data warning; shared by the sidebar and the
Bone Constraints tab."""

from ...limits.model import CALIBRATION
from ...limits.registry import model_class
from ...rig.io.datastore import health
from ...rig.live.status import bone_status, model_details
from ...rig.tasks.fit_report import chosen_line, human_line, mirrored_line, read_report


def draw_limit_settings(layout, pose_bone):
    settings = pose_bone.joint_limit
    layout.use_property_split = True
    layout.use_property_decorate = False
    col = layout.column()
    col.active = settings.enabled
    col.prop(settings, "model")
    options = model_class(settings.model).FIT_OPTIONS
    auto = model_class(settings.model).offers(CALIBRATION)
    if "mode" in options:
        col.prop(settings, "mode")
    if "twist_axis" in options and (auto or settings.mode == "SWING_TWIST"):
        col.prop(settings, "twist_axis")
    col.prop(settings, "reference")
    if settings.reference == "FRAME":
        col.prop(settings, "reference_frame")
    if not auto:
        col.prop(settings, "calibrate_padding")
    if auto or settings.calibrate_padding:
        col.prop(settings, "target_recall")
    else:
        col.prop(settings, "padding")
    if auto:
        col.prop(settings, "human_envelope")
    col.prop(settings, "use_symmetry")
    human = human_line(pose_bone)
    if human:
        col.label(text=human, icon="OUTLINER_OB_ARMATURE")
    report = read_report(settings)
    if report is not None:
        col.label(text=chosen_line(report), icon="INFO")
    mirrored = mirrored_line(pose_bone)
    if mirrored:
        col.label(text=mirrored, icon="MOD_MIRROR")
    col.prop(settings, "influence")
    row = col.row(heading="Softening")
    row.prop(settings, "use_softening", text="")
    sub = row.row(align=True)
    sub.active = settings.use_softening
    sub.prop(settings, "soft_radius", text="")
    sub.prop(settings, "soft_falloff", text="")
    text, icon = samples_line(settings)
    col.label(text=text, icon=icon)
    text, inside = bone_status(pose_bone)
    col.label(text=text, icon="CHECKMARK" if inside else ("ERROR" if inside is False else "INFO"))
    for line in model_details(pose_bone):
        col.label(text=line)
    if settings.last_error:
        col.label(text=settings.last_error, icon="ERROR")


def samples_line(settings):
    """``(text, icon)`` of the bone's sample count, which says when the samples are missing."""
    if settings.cloud_count and not settings.has_cloud:
        return f"Samples: {settings.cloud_count}, missing from the rig's data", "ERROR"
    return f"Samples: {settings.cloud_count}", "OUTLINER_DATA_POINTCLOUD"


def draw_store_warning(layout, armature):
    """A red box saying what limit data ``armature`` lost, why and what to do (nothing when all
    is there)."""
    lines = health(armature).lines()
    if not lines:
        return
    box = layout.box()
    box.alert = True
    col = box.column(align=True)
    for i, line in enumerate(lines):
        col.label(text=line, icon="ERROR" if i == 0 else "BLANK1")
