package kvstore

import "github.com/devkit-go/devkit/kvstore/internal/vfs"

type osFS = vfs.OS
