//! The panic handler: message, location and a frame-pointer backtrace on the
//! console, then exit with `ExitCode::Panic`. A panic while panicking on the
//! same CPU exits at once.

use core::panic::PanicInfo;
use core::sync::atomic::Ordering;

use crate::exit::{exit, ExitCode};

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    crate::arch::interrupts::disable();
    let cl = crate::arch::core_local::this();
    let cpu = crate::arch::cpu_id();
    if cl.fault_depth.fetch_add(1, Ordering::SeqCst) > 0 {
        crate::console::emergency(format_args!(
            "\n!!! cpu {cpu}: panic while panicking: {}\n",
            info.message()
        ));
        exit(ExitCode::Panic);
    }
    crate::console::emergency(format_args!(
        "\n!!! PANIC on cpu {cpu}: {}\n",
        info.message()
    ));
    if let Some(loc) = info.location() {
        crate::console::emergency(format_args!(
            "    at {}:{}:{}\n",
            loc.file(),
            loc.line(),
            loc.column()
        ));
    }
    crate::arch::backtrace::print_here();
    exit(ExitCode::Panic)
}
