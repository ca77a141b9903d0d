# issue 14: fused nodes come from the fuse pass only; a program cannot be written
model m {
  input x: f32[batch, 4]
  y = prim.fused(x, x)
  output y
}
