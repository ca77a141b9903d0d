# nn.mg - layers, activations, losses and metrics of the model language,
# written on the primitives of ir/ops.def (called as prim.NAME). Layers follow
# Keras: channels-last images, HWIO filters, glorot_uniform kernels and zero
# biases by default. Initializers (zeros, ones, glorot_uniform, he_normal) are
# built-in names.

# ---- activations ----

fn identity(x) {
  return x
}

fn relu(x: f32) {
  return prim.relu(x)
}

fn sigmoid(x: f32) {
  return prim.sigmoid(x)
}

fn tanh(x: f32) {
  return prim.tanh(x)
}

fn softmax(x: f32, axis: int = -1) {
  return prim.softmax(x, axis: axis)
}

# a where mask (1/0, as x > y gives) holds, else b; gradients to a where the
# mask is 1 and to b where it is 0 (finite a and b)
fn where(mask: f32, a, b) {
  return mask * a + (1.0 - mask) * b
}

# ---- layers ----

# y = activation(x W + b); params dense/kernel f32[k, units], dense/bias f32[units]
fn dense(x: f32[b, k], units: int, activation: fn = identity,
         kernel_initializer = glorot_uniform, bias_initializer = zeros) {
  param kernel: f32[k, units] = kernel_initializer
  param bias:   f32[units]    = bias_initializer
  return activation(prim.matmul(x, kernel) + bias)
}

# 2-D convolution of NHWC images with a square window; padding "valid" or "same"
fn conv2d(x: f32[b, h, w, cin], filters: int, kernel: int, strides: int = 1,
          padding: str = "valid", activation: fn = identity,
          kernel_initializer = glorot_uniform, bias_initializer = zeros) {
  param kernel: f32[kernel, kernel, cin, filters] = kernel_initializer
  param bias:   f32[filters]                      = bias_initializer
  return activation(prim.conv2d(x, kernel, strides: strides, padding: padding) + bias)
}

# pooling windows pool x pool, moving by strides (default: the window)
fn max_pool2d(x: f32[b, h, w, c], pool: int = 2, strides: int = pool, padding: str = "valid") {
  return prim.max_pool2d(x, k_h: pool, k_w: pool, strides: strides, padding: padding)
}

fn avg_pool2d(x: f32[b, h, w, c], pool: int = 2, strides: int = pool, padding: str = "valid") {
  return prim.avg_pool2d(x, k_h: pool, k_w: pool, strides: strides, padding: padding)
}

# [b, ...] -> [b, everything else]
fn flatten(x: f32) {
  return prim.reshape(x, dim(x, 0), size(x) / dim(x, 0))
}

# zeroes a fraction `rate` of the elements while training, scales the rest by 1/(1-rate);
# the identity in eval and predict. seed -1: a mask stream of this call's own
fn dropout(x: f32, rate: float, seed: int = -1) {
  return prim.dropout(x, rate: rate, seed: seed)
}

# ---- losses: the batch mean of a per-example loss ----

fn sparse_softmax_cross_entropy(logits: f32[b, c], labels: i32[b]) {
  return prim.reduce_mean(prim.sparse_xent(logits, labels), axes: 1)
}

fn mean_squared_error(predictions: f32[b, n], targets: f32[b, n]) {
  d = predictions - targets
  return prim.reduce_mean(prim.reduce_mean(d * d, axes: 2), axes: 1)
}

# ---- metrics: the batch mean of a per-example score ----

fn sparse_categorical_accuracy(logits: f32[b, c], labels: i32[b]) {
  return prim.reduce_mean(prim.argmax_match(logits, labels), axes: 1)
}

# ---- normalization ----

# Keras BatchNormalization over the last axis. Training normalizes with the
# batch's mean and (biased) variance and moves the state toward them:
# moving = moving * momentum + batch * (1 - momentum); eval and predict use the
# moving statistics. sync: true takes the statistics over the global batch
# (an all-reduce in the forward pass, Keras' synchronized=True, PyTorch's
# SyncBatchNorm); without it each replica uses its own batch and the moving
# statistics are averaged over replicas when saved and before eval
# (docs/language.md).
fn batch_norm(x: f32, momentum: float = 0.99, epsilon: float = 0.001, sync: int = false) {
  c = dim(x, -1)
  param gamma: f32[c] = ones
  param beta: f32[c] = zeros
  state moving_mean: f32[c] = zeros
  state moving_variance: f32[c] = ones
  rows = size(x) / c
  batch_mean = prim.reduce_mean(prim.reshape(x, rows, c), axes: 1)
  if sync {
    batch_mean = prim.all_reduce(batch_mean, mean: 1)
  }
  centered = x - prim.in_training(batch_mean, moving_mean)
  batch_variance = prim.reduce_mean(prim.reshape(centered * centered, rows, c), axes: 1)
  if sync {
    batch_variance = prim.all_reduce(batch_variance, mean: 1)
  }
  variance = prim.in_training(batch_variance, moving_variance)
  new_mean = prim.assign(moving_mean, moving_mean * momentum + batch_mean * (1.0 - momentum))
  new_variance = prim.assign(moving_variance, moving_variance * momentum + batch_variance * (1.0 - momentum))
  return centered * (gamma / prim.sqrt(variance + epsilon)) + beta
}

# ---- shape ops, reductions, normalization (issue 12) ----

# log(softmax(x)) along an axis, computed as x - logsumexp(x)
fn log_softmax(x: f32, axis: int = -1) {
  return prim.log_softmax(x, axis: axis)
}

# the axes argument of a reduction: an int or a list of ints
fn axes_list(axis) {
  if typeof(axis) == "list" {
    return axis
  }
  return [axis]
}

# largest / smallest element over the axes (default all); the gradient goes to
# the extreme element, split equally between ties
fn reduce_max(x: f32, axis = range(rank(x)), keepdims: int = false) {
  return prim.reduce_max(x, axes: axes_list(axis), keepdims: keepdims)
}

fn reduce_min(x: f32, axis = range(rank(x)), keepdims: int = false) {
  return prim.reduce_min(x, axes: axes_list(axis), keepdims: keepdims)
}

# log(sum(exp(x))) over the axes, shifted by the maximum
fn logsumexp(x: f32, axis = -1, keepdims: int = false) {
  axes = axes_list(axis)
  m = prim.reduce_max(x, axes: axes, keepdims: true)
  s = prim.reduce_sum(prim.exp(x - m), axes: axes, keepdims: keepdims)
  return prim.log(s) + prim.reduce_sum(m, axes: axes, keepdims: keepdims)
}

# the tensors of a list joined along an axis; all other dimensions equal
fn concat(xs, axis: int = -1) {
  return prim.concat(xs, axis: axis)
}

# n equal parts along an axis, as a list: a, b = split(x, 2)
fn split(x: f32, n: int, axis: int = -1) {
  r = rank(x)
  a = axis
  if a < 0 {
    a = a + r
  }
  if a < 0 or a >= r {
    return error("axis", axis, "of split is out of range for", x)
  }
  d = dim(x, a)
  if n < 1 or d / n * n != d {
    return error("split cannot cut axis", axis, "of", x, "into", n, "equal parts")
  }
  parts = []
  for i in range(n) {
    begin = []
    size = []
    for j in range(r) {
      if j == a {
        begin = begin + [i * (d / n)]
        size = size + [d / n]
      } else {
        begin = begin + [0]
        size = size + [dim(x, j)]
      }
    }
    parts = parts + [prim.slice(x, size, begin: begin)]
  }
  return parts
}

# axes reordered: output axis i is input axis perm[i] (the batch axis included)
fn transpose(x: f32, perm) {
  return prim.transpose(x, perm: perm)
}

# Keras Reshape: the batch axis kept, the rest to shape (one -1 inferred)
fn reshape(x: f32, shape) {
  return prim.reshape(x, [dim(x, 0)] + shape)
}

# x[begin : begin + size] on every axis (the batch axis included); a size of
# -1 runs to the end of its axis
fn slice(x: f32, begin, size) {
  return prim.slice(x, size, begin: begin)
}

# zeros around NHWC images: padding n, [h, w] (both sides) or [[top, bottom], [left, right]]
fn zero_padding2d(x: f32[b, h, w, c], padding = 1) {
  p = padding
  if typeof(p) == "int" {
    p = [p, p]
  }
  if typeof(p[0]) == "int" {
    p = [[p[0], p[0]], [p[1], p[1]]]
  }
  out = [b, h + p[0][0] + p[0][1], w + p[1][0] + p[1][1], c]
  return prim.pad(x, out, before: [0, p[0][0], p[1][0], 0])
}

# nearest-neighbour upsampling of NHWC images by size (n or [h, w]): each
# pixel repeated; the gradient sums each block
fn upsampling2d(x: f32[b, h, w, c], size = 2) {
  s = size
  if typeof(s) == "int" {
    s = [s, s]
  }
  y = prim.broadcast_to(prim.reshape(x, [b, h, 1, w, 1, c]), [b, h, s[0], w, s[1], c])
  return prim.reshape(y, [b, h * s[0], w * s[1], c])
}

# mean / maximum over the image axes of NHWC: [b, c] ([b, 1, 1, c] with keepdims)
fn global_average_pool2d(x: f32[b, h, w, c], keepdims: int = false) {
  return prim.reduce_mean(x, axes: [1, 2], keepdims: keepdims)
}

fn global_max_pool2d(x: f32[b, h, w, c], keepdims: int = false) {
  return prim.reduce_max(x, axes: [1, 2], keepdims: keepdims)
}

# Keras LayerNormalization over the last axis: each example's features
# normalized by their own mean and (biased) variance, then scaled by gamma
# (ones) and shifted by beta (zeros); the same in training and inference
fn layer_norm(x: f32, epsilon: float = 0.001) {
  c = dim(x, -1)
  param gamma: f32[c] = ones
  param beta: f32[c] = zeros
  mean = prim.reduce_mean(x, axes: [-1], keepdims: true)
  centered = x - mean
  variance = prim.reduce_mean(centered * centered, axes: [-1], keepdims: true)
  return centered / prim.sqrt(variance + epsilon) * gamma + beta
}
