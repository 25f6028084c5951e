package main

import (
	"os"
	"path/filepath"
	"strings"

	ra "github.com/ringactor/ringactor/runtime"
)

// sysfsRoot is where devices reads the affinity of the devices: Linux's
// sysfs. Elsewhere the files are absent and the columns say - and N/A.
const sysfsRoot = "/sys"

// affinity is a device's place on the host, as nvidia-smi topo -m shows
// it: the CPUs nearest it and their NUMA node, in the kernel's list form
// ("0-27,56-83"; "" where not known).
type affinity struct {
	CPUs string `json:"cpu_affinity"`
	NUMA string `json:"numa_affinity"`
}

// affinityOf reads d's affinity under root (sysfs): a GPU's from its PCI
// device (/sys/bus/pci/devices/<bus id>/local_cpulist and numa_node), the
// CPU's as every online CPU and NUMA node. A simulated GPU has no PCI
// device, and none.
func affinityOf(root string, d ra.Device) affinity {
	if d.Kind == ra.KindCPU {
		return affinity{
			CPUs: readSysfs(root, "devices/system/cpu/online"),
			NUMA: readSysfs(root, "devices/system/node/online"),
		}
	}
	if d.PCIBusID == "" {
		return affinity{}
	}
	dir := filepath.Join("bus/pci/devices", strings.ToLower(d.PCIBusID))
	a := affinity{CPUs: readSysfs(root, filepath.Join(dir, "local_cpulist"))}
	if n := readSysfs(root, filepath.Join(dir, "numa_node")); n != "-1" { // -1: the platform does not say
		a.NUMA = n
	}
	return a
}

// readSysfs is the trimmed content of root/name, "" if it cannot be read.
func readSysfs(root, name string) string {
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
