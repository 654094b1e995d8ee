package topo

// cpuid executes the CPUID instruction on the processor the calling thread
// runs on (cpuid_amd64.s).
func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)
