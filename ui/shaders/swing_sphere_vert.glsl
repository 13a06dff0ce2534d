// SPDX-License-Identifier: GPL-3.0-or-later
//
// Vertex shader of the swing sphere overlay (rig/overlay.py): a unit sphere in the bone's
// swing frame, placed by model_view_projection (view-projection x swing frame x radius).
// Passes the unit direction of each vertex on to swing_sphere_frag.glsl, which colours the
// allowed swing region per fragment.

#ifndef JL_CREATE_INFO
// Standalone declarations, for glslangValidator only (rig/overlay.py builds the interface).
in vec3 pos;
out vec3 direction;
uniform mat4 model_view_projection;
#endif

void main()
{
  direction = pos;
  gl_Position = model_view_projection * vec4(pos, 1.0);
}
