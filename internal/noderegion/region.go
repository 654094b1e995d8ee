// Package noderegion makes memory the processes of one node share: a file
// in a memory file system, mapped by each (MAP_SHARED). The creator maps
// and sizes it; the others map it by name; it is removed once everyone has
// it mapped, so that nothing is left behind should a process die.
package noderegion

import "os"

// shmDir is the memory file system regions go to where it exists (Linux).
const shmDir = "/dev/shm"

// prefix starts every region's file name.
const prefix = "commtune-region-"

// Dir returns where regions are created: /dev/shm where it exists, else
// the temporary directory (a file there, mapped shared, is shared memory
// all the same, paged through the file cache).
func Dir() string {
	if st, err := os.Stat(shmDir); err == nil && st.IsDir() {
		return shmDir
	}
	return os.TempDir()
}
