# nn.mg - a local module named like the stdlib's: `use nn` beside it reads
# this file, not stdlib/nn.mg (docs/language.md, modules)
fn dense(x: f32[b, k], units: int) {
  param local_kernel: f32[k, units] = ones
  return prim.matmul(x, local_kernel)
}
