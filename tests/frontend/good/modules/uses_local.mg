# uses_local.mg - `use lib_blocks` finds lib_blocks.mg beside this file
use lib_blocks
use nn

model uses_local {
  input x: f32[batch, 8]
  y = block(x, 4)
  output y
}
