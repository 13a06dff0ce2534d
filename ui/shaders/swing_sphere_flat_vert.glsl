// SPDX-License-Identifier: GPL-3.0-or-later
//
// Vertex shader of the flat-coloured parts of the authoring overlays (rig/overlay.py): the
// boundary line loop and current swing marker of the swing sphere, the twist disk's sector
// and lines. Positions are in the bone's swing frame, unit = the overlay radius.

#ifndef JL_CREATE_INFO
// Standalone declarations, for glslangValidator only (rig/overlay.py builds the interface).
in vec3 pos;
uniform mat4 model_view_projection;
#endif

void main()
{
  gl_Position = model_view_projection * vec4(pos, 1.0);
}
