package reads

import "os"

// A method value reads as well as a call does.
var read = os.ReadFile
