model m {
  input x: f32[batch, 8]
  output o0 = x
  output o1 = x
  output o2 = x
  output o3 = x
  output o4 = x
  output o5 = x
  output o6 = x
  output o7 = x
  output o8 = x
  output o9 = x
  output o10 = x
  output o11 = x
  output o12 = x
  output o13 = x
  output o14 = x
  output o15 = x
  output o16 = x
}
