// SPDX-License-Identifier: GPL-3.0-or-later
//
// Fragment shader of the flat-coloured overlay parts: one uniform colour per draw.

#ifndef JL_CREATE_INFO
// Standalone declarations, for glslangValidator only (rig/overlay.py builds the interface).
out vec4 frag_colour;
uniform vec4 colour;
#endif

void main()
{
  frag_colour = colour;
}
