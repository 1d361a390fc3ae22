"""What POST /v1/skill-packages does apart from HTTP: record, validate, install, record again."""

from __future__ import annotations

import shutil
import uuid
from typing import Any

from sqlalchemy.orm import Session

from api import context
from api.errors import ApiError
from api.zip_bodies import body_cap, package_api_error, save_zip_body
from runner_core.error_codes import ErrorCode
from runner_core.skills.installer import InstallResult, installer_for
from runner_core.skills.package import (
    PACKAGE_LIMITS,
    PackageError,
    check_calls,
    unpack_package,
)
from runner_core.statuses import InstallStatus
from runner_core.store.models import SkillInstall, utcnow
from runner_core.uploads import UploadError
from runner_core.workspace import disk_full


def install_package(session: Session) -> SkillInstall:
    """Install or update the skill in the request's zip; a refusal is a 400 with every error
    (409 when a skill of the other format has its id)."""
    settings = context.settings()
    installer = installer_for(settings.data_dir, settings.skills_dir)
    workdir = installer.new_workdir()
    try:
        size, sha256 = save_zip_body("package", workdir / "package.zip", body_cap(PACKAGE_LIMITS))
        record = SkillInstall(
            id=str(uuid.uuid4()),
            status=InstallStatus.INSTALLING,
            package_size=size,
            package_sha256=sha256,
        )
        session.add(record)
        session.commit()
        try:
            pkg = unpack_package(workdir / "package.zip", workdir)
            installer.check_format(pkg)  # before check_calls, which names the same clash a 400
            check_calls(pkg, settings.skills_dir)
            record.skill_id, record.version = pkg.id, pkg.version
            record.warnings = list(pkg.warnings)
            result = installer.install(pkg)
        except (UploadError, PackageError) as exc:
            error = package_api_error(exc, {"install_id": record.id})
            _finish(
                session,
                record,
                InstallStatus.FAILED,
                error={"code": error.code, "message": error.message, "details": error.details},
            )
            raise error from exc
        except Exception as exc:  # answered 507 (a full disk) or 500; the record says which
            code = ErrorCode.STORAGE_FULL if disk_full(exc) else ErrorCode.INTERNAL_ERROR
            _finish(
                session,
                record,
                InstallStatus.FAILED,
                error={"code": code, "message": f"{type(exc).__name__}: {exc}"},
            )
            raise
        _finish(session, record, InstallStatus.SUCCEEDED, result=result)
        return record
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _finish(
    session: Session,
    record: SkillInstall,
    status: str,
    *,
    result: InstallResult | None = None,
    error: dict[str, Any] | None = None,
) -> None:
    record.status, record.error, record.finished_at = status, error, utcnow()
    if error and not record.skill_id:
        record.skill_id = (error.get("details") or {}).get("skill_id")
    if result is not None:
        settings = context.settings()
        record.previous_version, record.action = result.previous_version, result.action
        if result.archive_path is not None:
            record.archive_path = result.archive_path.relative_to(settings.data_dir).as_posix()
    session.commit()


def load_install(session: Session, install_id: str) -> SkillInstall:
    """The install record, or 404 INSTALL_NOT_FOUND."""
    record = session.get(SkillInstall, install_id)
    if record is None:
        raise ApiError(
            404,
            ErrorCode.INSTALL_NOT_FOUND,
            f"no skill package install '{install_id}'",
            {"install_id": install_id},
        )
    return record
