//go:build !unix

package logfile

import "io/fs"

// fileKey identifies a file by its path where the OS gives no inode;
// rotation then re-registers each renamed file.
func fileKey(path string, fi fs.FileInfo) string { return "path:" + path }
