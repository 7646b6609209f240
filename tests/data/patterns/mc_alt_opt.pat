# an optional bias_add, then either activation
conv_act: (nn.relu(nn.bias_add?(nn.conv2d(_, _), _)) | sigmoid(nn.bias_add?(nn.conv2d(_, _), _)))
