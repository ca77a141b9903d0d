# lib_blocks.mg - a module beside the model that uses it (uses_local.mg)
use nn

fn block(x: f32[b, k], units: int) {
  return dense(dense(x, units, activation: relu), units)
}
