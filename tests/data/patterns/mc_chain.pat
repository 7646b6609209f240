# A table as TVM's tests write one: the longer pattern first.
conv2d_bias_relu: nn.relu(nn.bias_add(nn.conv2d(_, _), _))
conv2d_relu: nn.relu(nn.conv2d(_, _){padding=[1, 1, 1, 1]})
