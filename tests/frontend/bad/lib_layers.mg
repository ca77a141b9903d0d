# lib_layers.mg - a module beside bad/use_local_error.mg (not a test itself)
fn widen(x: f32[b, k], units: int) {
  param kernel: f32[units, k] = glorot_uniform
  return prim.matmul(x, kernel)
}
