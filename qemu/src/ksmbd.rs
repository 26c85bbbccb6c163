//! ksmbd, Linux's in-kernel SMB server, as a test fixture: a QEMU Linux
//! guest (Debian's 7.3.4 cloud kernel with its `ksmbd.ko`, Debian 13's
//! `ksmbd-tools`) serving a tmpfs share on a forwarded loopback port.
//!
//! The host has no ksmbd module to load, so the server runs where it can:
//! [`ensure_image`] builds the guest once into `BUILD_DIR/ksmbd/` (the
//! kernel packages the reference guest uses, `BUILD_DIR/linuxref/7.3/debs/`;
//! `busybox-static`; `ksmbd-tools` and the libraries it links, from the
//! private Debian 13 apt configuration of [`crate::linuxref`]; the static
//! `xattr` helper; `ksmbd/init.sh` as `/init`), cached behind a stamp.
//! [`Fixture::start`] appends a small archive naming the user, the share
//! and its entries (with their `user.` EAs, set on the server's tmpfs) to
//! that initramfs, boots it under TCG with user networking whose only way
//! in is `hostfwd=tcp:127.0.0.1:PORT-:445` (`restrict=on`: the guest
//! reaches nothing), and returns once the port answers an SMB2 NEGOTIATE.
//! Dropping the [`Fixture`] stops QEMU (SIGTERM, reaped); the guest also
//! powers itself off after [`KsmbdOpts::life`], should this process die
//! without dropping it.
//!
//! What ksmbd sends that Samba does not (why it is here): EaSize 0 in every
//! directory listing and in FileAllInformation, EAs or not
//! (`smb2_populate_readdir_entry` writes the reparse tag there).
//!
//! Touches only: `BUILD_DIR/ksmbd/`, `BUILD_DIR/linuxref/` (debs fetched
//! as the reference guest fetches them), its own temp dir, one free TCP
//! port on 127.0.0.1, and the QEMU process it starts.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::linuxref::{
    decompressed_modules, digest, download, dpkg_x, failed, gcc_static, mkdir, module_load_order,
    pack_initramfs, package_kernel_image, require_tools, trixie_apt, trixie_deb, AptSource,
    Release, SkipReason, BUSYBOX_PACKAGE, LINUX_TCG_CPU,
};
use crate::process::{start_on_a_free_port, PortRetry, ServerProcess};
use crate::runner::{Accel, QemuConfig};
use crate::samba::make_temp_dir;

/// The kernel release whose `ksmbd.ko` runs (the reference guest's 7.3.4).
pub const RELEASE: Release = Release::V7_3;

/// Modules the guest loads, dependencies and softdeps first (see
/// `linuxref::module_load_order`): the network, the crypto ksmbd asks for
/// by name at run time (signing: CMAC; encryption: CCM and GCM over CTR),
/// the UTF-8 table and ksmbd itself.
const GUEST_MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_net",
    "cmac",
    "ctr",
    "ccm",
    "gcm",
    "nls_utf8",
    "ksmbd",
];

/// Debian 13 packages holding ksmbd-tools and what it links
/// (`ksmbd.tools`: glib, libnl-3, libnl-genl-3, libc; glib: libpcre2-8,
/// libatomic, libm).
const TOOLS_PACKAGES: &[&str] = &[
    "ksmbd-tools",
    "libc6",
    "libglib2.0-0t64",
    "libpcre2-8-0",
    "libatomic1",
    "libnl-3-200",
    "libnl-genl-3-200",
];

/// The shared libraries copied from those packages (with the loader).
/// No gconv modules: `ksmbd.adduser` finds no UTF-16LE converter and says
/// so, then hashes through glibc's built-in UCS-2LE, the same bytes for
/// any password inside the BMP (the fixture's are ASCII).
const TOOLS_LIBS: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libglib-2.0.so.0",
    "libpcre2-8.so.0",
    "libatomic.so.1",
    "libnl-3.so.200",
    "libnl-genl-3.so.200",
];

/// The guest's `/init` (what it does and the spec format: its header).
const INIT_SCRIPT: &str = include_str!("ksmbd/init.sh");

/// Bumped whenever the layout of the cached build changes.
const STAMP_VERSION: &str = "ksmbd-guest 1";

/// The guest side of the forward: ksmbd's port.
const GUEST_SMB_PORT: u16 = 445;

/// Three ports at most, and only while the port was taken: another process
/// may take it between the probe and QEMU's bind, and QEMU then exits;
/// any other failure (the guest did not boot) ends the start.
const PORT_RETRY: PortRetry = PortRetry {
    name: "the ksmbd guest",
    tries: 3,
    only_on: Some(io::ErrorKind::AddrInUse),
};

/// The built guest: what [`Fixture::start`] boots.
#[derive(Clone, Debug)]
pub struct Image {
    /// The kernel (bzImage).
    pub kernel: PathBuf,
    /// The initramfs (busybox, modules, ksmbd-tools, `/init`).
    pub initramfs: PathBuf,
    /// `uname -r` of the guest (`7.3.4+deb13-cloud-amd64`).
    pub kernel_release: String,
    /// The ksmbd-tools package file it was built from.
    pub tools_package: String,
}

/// Builds (or finds cached in `build_dir/ksmbd/`) the guest. An error names
/// the missing piece (a package that cannot be had, a tool, a failed step).
pub fn ensure_image(build_dir: &Path) -> Result<Image, SkipReason> {
    let dir = build_dir.join("ksmbd");
    mkdir(&dir)?;
    let dir = dir
        .canonicalize()
        .map_err(|e| failed(&format!("resolving {}", dir.display()), e))?;
    require_tools(&[
        ("gcc", "gcc"),
        ("cpio", "cpio"),
        ("gzip", "gzip"),
        ("xz", "xz-utils"),
        ("dpkg", "dpkg"),
        ("apt-get", "apt"),
    ])?;
    let xattr = dir.join("xattr");
    gcc_static(&crate::linuxref::xattr_source(), &xattr, &[])?;
    let stamp = dir.join("stamp");
    let sum = digest(&[
        INIT_SCRIPT.as_bytes(),
        GUEST_MODULES.join(",").as_bytes(),
        TOOLS_PACKAGES.join(",").as_bytes(),
        &std::fs::read(&xattr).unwrap_or_default(),
    ]);
    let image = Image {
        kernel: dir.join("vmlinuz"),
        initramfs: dir.join("initramfs.gz"),
        kernel_release: String::new(),
        tools_package: String::new(),
    };
    if let Ok(s) = std::fs::read_to_string(&stamp) {
        let l: Vec<&str> = s.lines().collect();
        if l.len() == 4
            && l[0] == STAMP_VERSION
            && l[1] == sum
            && image.kernel.is_file()
            && image.initramfs.is_file()
        {
            return Ok(Image {
                kernel_release: l[2].into(),
                tools_package: l[3].into(),
                ..image
            });
        }
    }

    // The kernel packages, where the reference guest keeps them.
    let debs = build_dir.join("linuxref").join(RELEASE.name()).join("debs");
    mkdir(&debs)?;
    let packages = RELEASE.split_packages().unwrap_or_default();
    let mut kernel_debs = Vec::new();
    if !packages.is_empty() {
        let apt = trixie_apt(build_dir)?;
        for p in &packages {
            kernel_debs.push(download(&debs, p, &apt)?);
        }
    }
    let busybox_deb = download(&debs, BUSYBOX_PACKAGE, &AptSource::machine())?;
    let mut tools_debs = Vec::new();
    for p in TOOLS_PACKAGES {
        tools_debs.push(trixie_deb(build_dir, p)?);
    }
    let tools_package = tools_debs[0]
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();

    let kroot = dir.join("kernel-root");
    let uroot = dir.join("user-root");
    for root in [&kroot, &uroot] {
        let _ = std::fs::remove_dir_all(root);
    }
    for deb in &kernel_debs {
        dpkg_x(deb, &kroot)?;
    }
    for deb in tools_debs.iter().chain([&busybox_deb]) {
        dpkg_x(deb, &uroot)?;
    }
    let vmlinuz = package_kernel_image(&kroot).ok_or_else(|| SkipReason::BuildFailed {
        step: "unpacking the kernel".into(),
        detail: format!("no vmlinuz in {}", packages.join(", ")),
    })?;
    let modules_root = kroot.join("usr/lib/modules");
    let kernel_release = std::fs::read_dir(&modules_root)
        .ok()
        .and_then(|rd| rd.filter_map(|e| e.ok()).find(|e| e.path().is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .ok_or_else(|| SkipReason::BuildFailed {
            step: "unpacking the kernel".into(),
            detail: format!("no usr/lib/modules/RELEASE in {}", packages.join(", ")),
        })?;
    let modules = module_load_order(&modules_root, GUEST_MODULES)?;
    let modules = decompressed_modules(&dir.join("modules"), &modules)?;

    let root = dir.join("initramfs-root");
    let _ = std::fs::remove_dir_all(&root);
    for d in ["bin", "modules", "lib64", "usr/sbin", "usr/libexec", LIBDIR] {
        mkdir(&root.join(d))?;
    }
    copy_exec(&uroot.join("bin/busybox"), &root.join("bin/busybox"))?;
    copy_exec(&xattr, &root.join("xattr"))?;
    let ulib = uroot.join(LIBDIR);
    copy_exec(
        &ulib.join("ld-linux-x86-64.so.2"),
        &root.join("lib64/ld-linux-x86-64.so.2"),
    )?;
    for lib in TOOLS_LIBS {
        copy_exec(&ulib.join(lib), &root.join(LIBDIR).join(lib))?;
    }
    copy_exec(
        &uroot.join("usr/libexec/ksmbd.tools"),
        &root.join("usr/libexec/ksmbd.tools"),
    )?;
    for tool in [
        "ksmbd.mountd",
        "ksmbd.adduser",
        "ksmbd.addshare",
        "ksmbd.control",
    ] {
        std::os::unix::fs::symlink("../libexec/ksmbd.tools", root.join("usr/sbin").join(tool))
            .map_err(|e| failed("linking ksmbd.tools", e))?;
    }
    let mut order = String::new();
    for m in &modules {
        let name = m.file_name().unwrap_or_default().to_string_lossy();
        copy_exec(m, &root.join("modules").join(&*name))?;
        let _ = writeln!(order, "{name}");
    }
    write(&root.join("modules/order"), order.as_bytes())?;
    write(&root.join("init"), INIT_SCRIPT.as_bytes())?;
    chmod_x(&root.join("init"))?;
    pack_initramfs(&root, &image.initramfs)?;
    std::fs::copy(&vmlinuz, &image.kernel).map_err(|e| failed("copying vmlinuz", e))?;
    write(
        &stamp,
        format!("{STAMP_VERSION}\n{sum}\n{kernel_release}\n{tools_package}\n").as_bytes(),
    )?;
    for d in [&kroot, &uroot, &root, &dir.join("modules")] {
        let _ = std::fs::remove_dir_all(d);
    }
    Ok(Image {
        kernel_release,
        tools_package,
        ..image
    })
}

/// Where Debian 13 keeps its libraries (and the guest's loader finds them).
const LIBDIR: &str = "usr/lib/x86_64-linux-gnu";

/// One entry of the guest's share, created before ksmbd starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A directory.
    Dir(String),
    /// A regular file and its text (no whitespace).
    File(String, String),
    /// An extended attribute on an entry: name (`user.x` is the SMB EA
    /// `x`) and text value (no whitespace).
    Xattr(String, String, String),
}

/// How the fixture is started. `KsmbdOpts::default()`: user `fixture`,
/// share `share`, an empty share, 1 vCPU.
#[derive(Clone, Debug)]
pub struct KsmbdOpts {
    /// The share's entries, in order.
    pub entries: Vec<Entry>,
    /// SMB user name.
    pub user: String,
    /// Its password.
    pub password: String,
    /// Share name.
    pub share: String,
    /// vCPUs of the guest. One by default: on a loaded 2-core host a
    /// 1-vCPU TCG guest answered NEGOTIATE after 23 s where 2 vCPUs took
    /// 50 s (the second vCPU's thread competes with the first and with
    /// the test).
    pub cpus: u32,
    /// How long to wait for the guest to answer NEGOTIATE (a TCG boot of
    /// the cloud kernel takes 10-30 s on a busy 2-core machine).
    pub boot_timeout: Duration,
    /// The guest powers itself off after this long.
    pub life: Duration,
}

impl Default for KsmbdOpts {
    fn default() -> Self {
        KsmbdOpts {
            entries: Vec::new(),
            user: "fixture".into(),
            password: "fixture-pw".into(),
            share: "share".into(),
            cpus: 1,
            boot_timeout: Duration::from_secs(150),
            life: Duration::from_secs(1200),
        }
    }
}

impl KsmbdOpts {
    /// The `/ksmbd/spec` text the guest's init reads (see its header).
    pub fn spec(&self) -> io::Result<String> {
        let mut s = String::new();
        let _ = writeln!(s, "user {} {}", word(&self.user)?, word(&self.password)?);
        let _ = writeln!(s, "share {}", word(&self.share)?);
        for e in &self.entries {
            match e {
                Entry::Dir(n) => writeln!(s, "dir {}", name(n)?),
                Entry::File(n, t) => writeln!(s, "file {} {}", name(n)?, word(t)?),
                Entry::Xattr(n, x, v) => {
                    writeln!(s, "xattr {} {} {}", name(n)?, word(x)?, word(v)?)
                }
            }
            .map_err(io::Error::other)?;
        }
        Ok(s)
    }
}

/// A running ksmbd guest. Stopped (SIGTERM to QEMU, reaped) and its temp
/// dir removed on drop; `KSMBD_FIXTURE_KEEP=1` keeps the dir (the serial
/// log is there).
#[derive(Debug)]
pub struct Fixture {
    /// The forwarded port on 127.0.0.1.
    pub port: u16,
    /// SMB user name.
    pub user: String,
    /// Its password.
    pub password: String,
    /// Share name, as in `//127.0.0.1/SHARE`.
    pub share: String,
    /// From QEMU's start to the first NEGOTIATE answered.
    pub boot_time: Duration,
    /// `ksmbd-guest: ready …`, as the guest printed it.
    pub ready_line: String,
    /// The fixture's temp dir (initrd, serial log).
    pub dir: PathBuf,
    /// The guest's serial console.
    pub log: PathBuf,
    server: ServerProcess,
}

impl Fixture {
    /// Why the fixture cannot run here (`Err` with a sentence naming the
    /// missing piece), or the image to boot. Builds the image on first use.
    pub fn prepare() -> Result<Image, String> {
        if crate::samba::which(crate::runner::DEFAULT_QEMU).is_none() {
            return Err(format!(
                "{} not installed (apt-get install qemu-system-x86)",
                crate::runner::DEFAULT_QEMU
            ));
        }
        let build = crate::linuxref::default_build_dir();
        ensure_image(&build).map_err(|e| missing(&e))
    }

    /// For a test (`file`, its name in the skip line): the image prepared
    /// and booted with `opts`'s share, or `None` after
    /// [`crate::fixtures::skip`] where the guest cannot run here. A boot that
    /// fails once the image is there is a panic (the test's failure).
    pub fn start_or_skip(file: &str, opts: &KsmbdOpts) -> Option<(Image, Fixture)> {
        let image = match Fixture::prepare() {
            Ok(i) => i,
            Err(why) => {
                crate::fixtures::skip(file, "the ksmbd guest", why);
                return None;
            }
        };
        let fx = Fixture::start(&image, opts)
            .unwrap_or_else(|e| panic!("ksmbd fixture ({}): {e}", image.kernel_release));
        Some((image, fx))
    }

    /// Boot `image` with `opts`'s share; returns once the forwarded port
    /// answers an SMB2 NEGOTIATE.
    pub fn start(image: &Image, opts: &KsmbdOpts) -> io::Result<Fixture> {
        let spec = opts.spec()?;
        let dir = make_temp_dir("qemu-ksmbd")?;
        let mut fx = Fixture {
            port: 0,
            user: opts.user.clone(),
            password: opts.password.clone(),
            share: opts.share.clone(),
            boot_time: Duration::ZERO,
            ready_line: String::new(),
            log: dir.join("console.log"),
            dir,
            server: ServerProcess::default(),
        };
        // From here on, an error drops `fx`, which removes the temp dir.
        let initrd = fx.dir.join("initrd");
        // The kernel unpacks concatenated archives; zeros between them are
        // skipped, and the second starts 4-aligned.
        let mut bytes = std::fs::read(&image.initramfs)?;
        pad4(&mut bytes);
        bytes.extend(newc_archive(&[
            ("ksmbd", None),
            ("ksmbd/spec", Some(spec.as_bytes())),
        ]));
        std::fs::write(&initrd, bytes)?;
        start_on_a_free_port(
            &mut fx,
            &PORT_RETRY,
            |fx, port, _| {
                fx.port = port;
                fx.boot(image, opts, &initrd)
            },
            Fixture::stop,
        )?;
        Ok(fx)
    }

    fn boot(&mut self, image: &Image, opts: &KsmbdOpts, initrd: &Path) -> io::Result<()> {
        let life = opts.life.as_secs().max(1);
        let cfg = QemuConfig::new(&image.kernel)
            .accel(Accel::Tcg)
            .cpu(LINUX_TCG_CPU)
            .smp(opts.cpus)
            .memory("512M".parse().expect("constant size"))
            .initrd(initrd)
            .cmdline(format!(
                "console=ttyS0 loglevel=4 panic=-1 rdinit=/init ksmbd.life={life}"
            ))
            .extra_arg("-netdev")
            .extra_arg(format!(
                "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{}-:{GUEST_SMB_PORT}",
                self.port
            ))
            .extra_arg("-device")
            .extra_arg("virtio-net-pci,netdev=n0");
        cfg.validate()
            .map_err(|e| io::Error::other(e.to_string()))?;
        let log = std::fs::File::create(&self.log)?;
        let t0 = Instant::now();
        self.server = ServerProcess::spawn(Command::new(&cfg.qemu).args(cfg.args()), log)?;
        let deadline = t0 + opts.boot_timeout;
        loop {
            let console = std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Some(l) = console
                .lines()
                .find(|l| l.starts_with("ksmbd-guest: ready"))
            {
                self.ready_line = l.trim_end_matches('\r').to_string();
                if negotiate(self.addr()).is_ok() {
                    self.boot_time = t0.elapsed();
                    return Ok(());
                }
            }
            let exited = self.server.pid().is_none_or(|p| !process_runs(p));
            if exited || console.contains("ksmbd-guest: FAILED") || console.contains("Kernel panic")
            {
                let kind = if console.contains("Could not set up host forwarding") {
                    io::ErrorKind::AddrInUse
                } else {
                    io::ErrorKind::Other
                };
                return Err(io::Error::new(
                    kind,
                    format!(
                        "the ksmbd guest stopped at start; console tail:\n{}",
                        tail(&console)
                    ),
                ));
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "port {} answered no SMB2 NEGOTIATE within {:?}; console tail:\n{}",
                        self.port,
                        opts.boot_timeout,
                        tail(&console)
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `//127.0.0.1/SHARE`.
    pub fn unc(&self) -> String {
        format!("//127.0.0.1/{}", self.share)
    }

    /// The end of the guest's console (for error messages).
    pub fn console_tail(&self) -> String {
        tail(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }

    /// Stop QEMU: SIGTERM, wait up to 5 s, then SIGKILL; always reaped.
    pub fn stop(&mut self) {
        self.server.stop();
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.stop();
        if std::env::var_os("KSMBD_FIXTURE_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// What [`ensure_image`]'s error says is missing, in the fixture's words
/// (the reference guest's own wording speaks of skipping that guest).
pub fn missing(e: &SkipReason) -> String {
    match e {
        SkipReason::MissingTool { tool, package } => format!(
            "the ksmbd guest cannot be built: `{tool}` is missing (Debian package {package}; \
             `make setup` as root)"
        ),
        SkipReason::PackageUnavailable { package, detail } => format!(
            "the ksmbd guest cannot be built: Debian package {package} cannot be had ({}); \
             it is fetched once into build/ (the Debian 13 archive must be reachable)",
            detail.trim()
        ),
        SkipReason::BuildFailed { step, detail } => format!(
            "the ksmbd guest cannot be built: {step} failed: {}",
            detail.trim()
        ),
    }
}

/// Send one SMB2 NEGOTIATE (2.0.2 to 3.0.2, no contexts) to `addr` and
/// check that an SMB2 NEGOTIATE response with STATUS_SUCCESS comes back.
/// QEMU's forward accepts before the guest listens, so a TCP connect alone
/// proves nothing.
pub fn negotiate(addr: SocketAddr) -> io::Result<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(3)))?;
    s.write_all(&negotiate_request())?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let n = u32::from_be_bytes([0, len[1], len[2], len[3]]) as usize;
    if len[0] != 0 || !(64 + 65..=1 << 20).contains(&n) {
        return Err(io::Error::other(format!("bad NetBIOS header {len:02x?}")));
    }
    let mut msg = vec![0u8; n];
    s.read_exact(&mut msg)?;
    let status = u32::from_le_bytes([msg[8], msg[9], msg[10], msg[11]]);
    let command = u16::from_le_bytes([msg[12], msg[13]]);
    if msg[..4] != *b"\xfeSMB" || command != 0 || status != 0 {
        return Err(io::Error::other(format!(
            "not an SMB2 NEGOTIATE success: {:02x?} status {status:#x}",
            &msg[..16]
        )));
    }
    // The chosen dialect: body offset 4.
    Ok(u16::from_le_bytes([msg[64 + 4], msg[64 + 5]]))
}

/// The NEGOTIATE request [`negotiate`] sends, NetBIOS header included.
fn negotiate_request() -> Vec<u8> {
    let dialects: [u16; 4] = [0x0202, 0x0210, 0x0300, 0x0302];
    let mut m = Vec::new();
    m.extend_from_slice(b"\xfeSMB");
    m.extend_from_slice(&64u16.to_le_bytes()); // StructureSize
    m.extend_from_slice(&0u16.to_le_bytes()); // CreditCharge
    m.extend_from_slice(&0u32.to_le_bytes()); // Status
    m.extend_from_slice(&0u16.to_le_bytes()); // Command: NEGOTIATE
    m.extend_from_slice(&1u16.to_le_bytes()); // CreditRequest
    m.extend_from_slice(&[0; 4 + 4 + 8 + 4 + 4 + 8 + 16]); // Flags … Signature
    m.extend_from_slice(&36u16.to_le_bytes()); // StructureSize
    m.extend_from_slice(&(dialects.len() as u16).to_le_bytes());
    m.extend_from_slice(&1u16.to_le_bytes()); // SecurityMode: signing enabled
    m.extend_from_slice(&0u16.to_le_bytes()); // Reserved
    m.extend_from_slice(&0u32.to_le_bytes()); // Capabilities
    m.extend_from_slice(b"ksmbd-fixture-01"); // ClientGuid
    m.extend_from_slice(&0u64.to_le_bytes()); // ClientStartTime
    for d in dialects {
        m.extend_from_slice(&d.to_le_bytes());
    }
    let mut out = (m.len() as u32).to_be_bytes().to_vec();
    out.extend(m);
    out
}

/// A newc (`cpio -H newc`) archive of `(path, None)` directories and
/// `(path, Some(data))` files, owned by root, closed by its trailer.
fn newc_archive(entries: &[(&str, Option<&[u8]>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ino = 0x4b53_0000u32;
    let trailer = [("TRAILER!!!", Some(&[][..]))];
    for (path, data) in entries.iter().chain(trailer.iter()) {
        ino += 1;
        let (mode, body): (u32, &[u8]) = match data {
            Some(d) if *path == "TRAILER!!!" => (0, d),
            Some(d) => (0o100_644, d),
            None => (0o040_755, &[]),
        };
        let fields = [
            ino,
            mode,
            0,
            0,
            1,
            0,
            body.len() as u32,
            0,
            0,
            0,
            0,
            path.len() as u32 + 1,
            0,
        ];
        out.extend_from_slice(b"070701");
        for f in fields {
            out.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        out.extend_from_slice(path.as_bytes());
        out.push(0);
        pad4(&mut out);
        out.extend_from_slice(body);
        pad4(&mut out);
    }
    out
}

fn pad4(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
}

/// A spec word: printable ASCII, no whitespace.
fn word(s: &str) -> io::Result<&str> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("ksmbd spec: {s:?} is not one printable word"),
        ));
    }
    Ok(s)
}

/// A share entry name: a spec word, no `/`, not `.` or `..`.
fn name(s: &str) -> io::Result<&str> {
    if s.contains('/') || s == "." || s == ".." {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("ksmbd spec: bad entry name {s:?}"),
        ));
    }
    word(s)
}

/// Whether process `pid` (our child) still runs: not gone, not a zombie.
fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

/// The last 40 lines of a console.
fn tail(console: &str) -> String {
    let lines: Vec<&str> = console.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

fn write(p: &Path, data: &[u8]) -> Result<(), SkipReason> {
    std::fs::write(p, data).map_err(|e| failed(&format!("writing {}", p.display()), e))
}

fn chmod_x(p: &Path) -> Result<(), SkipReason> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| failed(&format!("chmod {}", p.display()), e))
}

/// Copy a file (following the packages' symlinks) and make it executable.
fn copy_exec(from: &Path, to: &Path) -> Result<(), SkipReason> {
    std::fs::copy(from, to).map_err(|e| failed(&format!("copying {}", from.display()), e))?;
    chmod_x(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_names_every_entry_and_refuses_spaces() {
        let mut o = KsmbdOpts {
            entries: vec![
                Entry::Dir("d0".into()),
                Entry::File("f0".into(), "x".into()),
                Entry::Xattr("f0".into(), "user.a".into(), "1".into()),
            ],
            ..KsmbdOpts::default()
        };
        assert_eq!(
            o.spec().unwrap(),
            "user fixture fixture-pw\nshare share\ndir d0\nfile f0 x\nxattr f0 user.a 1\n"
        );
        o.entries.push(Entry::File("a b".into(), "x".into()));
        assert!(o.spec().is_err());
        o.entries.pop();
        o.entries.push(Entry::Dir("../x".into()));
        assert!(o.spec().is_err());
    }

    #[test]
    fn newc_archive_layout() {
        let a = newc_archive(&[("k", None), ("k/s", Some(b"abc"))]);
        assert_eq!(a.len() % 4, 0);
        assert!(a.starts_with(b"070701"));
        // Header (110) + "k\0" padded to 112; the file's header at 112.
        assert_eq!(&a[112..118], b"070701");
        let text = String::from_utf8_lossy(&a);
        assert!(text.contains("k/s\0"));
        assert!(text.contains("abc"));
        assert!(text.contains("TRAILER!!!\0"));
    }

    #[test]
    fn a_missing_package_is_named() {
        let m = missing(&SkipReason::PackageUnavailable {
            package: "ksmbd-tools".into(),
            detail: "E: Unable to locate package ksmbd-tools\n".into(),
        });
        assert!(
            m.contains("Debian package ksmbd-tools cannot be had"),
            "{m}"
        );
        assert!(
            m.contains("E: Unable to locate package ksmbd-tools)"),
            "{m}"
        );
    }

    #[test]
    fn the_negotiate_request_is_framed() {
        let r = negotiate_request();
        assert_eq!(
            u32::from_be_bytes([0, r[1], r[2], r[3]]) as usize,
            r.len() - 4
        );
        assert_eq!(&r[4..8], b"\xfeSMB");
        // 64-byte header, 36-byte body, 4 dialects.
        assert_eq!(r.len(), 4 + 64 + 36 + 8);
    }
}
