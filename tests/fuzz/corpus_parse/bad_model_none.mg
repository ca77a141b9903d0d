use nn

fn f(x) {
  return x
}
