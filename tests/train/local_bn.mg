# local_bn.mg - batch_norm without sync: each replica normalizes by its own
# batch, so 2 and 4 devices must differ from 1 device (the documented
# difference; sync_bn.mg is the same model with sync) (tests/train.cmake)
use nn

fn conv(x: f32[b, h, w, cin], filters: int) {
  param kernel: f32[3, 3, cin, filters] = glorot_uniform
  return prim.conv2d(x, kernel)
}

model local_bn {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = relu(batch_norm(conv(image, 8)))
  x = max_pool2d(x, 2)
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}

train local_bn {
  optimizer = sgd(learning_rate: 0.02)
  batch = 64 global
}
