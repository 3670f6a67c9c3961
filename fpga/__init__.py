"""Open synthesis (Yosys + nextpnr on ECP5 and iCE40), device presets, fit check, reports and
vendor project scripts (Vivado, Quartus) for handoff. See docs/architecture.md, "Layout".

Public API:
  synthesize(sv_files, top, target, work_dir, ...) -> SynthReport    (fpga.synth)
  get_device(name) -> Device; DEVICES; known_targets()                (fpga.devices)
  check_fit(config, device) -> FitEstimate                            (fpga.fit)
  write_vendor_project(sv_files, top, target, out_dir, ...)           (fpga.vendor)
  project.synth_model(model, out, config) -> SynthOutput              (``synth`` subcommand)
"""

from .devices import DEVICES, Device, get_device, known_targets
from .fit import FitEstimate, check_fit, estimate
from .report import SynthReport
from .synth import synthesize
from .vendor import vendor_files, write_vendor_project

__all__ = ["DEVICES", "Device", "FitEstimate", "SynthReport", "check_fit", "estimate",
           "get_device", "known_targets", "synthesize", "vendor_files",
           "write_vendor_project"]
