# a typo in an op name
ok: nn.relu(_)
bad: nn.relu(nn.bias_add(nn.conv3d_typo(_, _), _))
