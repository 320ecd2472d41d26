package resp

// CheckFunctionsFile loads path, a FunctionsFile, as NewServer would, and
// returns what is wrong with it: nil when it loads or does not exist
// (devkit kv verify checks a data directory's functions with it).
func CheckFunctionsFile(path string) error {
	s := &Server{opts: Options{FunctionsFile: path}.withDefaults()}
	return newScriptEngine(s).restoreFile()
}
